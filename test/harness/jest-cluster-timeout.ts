// testTimeout is global-only in Jest: 5 minutes for the cluster project, where a test waits on
// pods, rollouts and image pulls.
import { jest } from '@jest/globals';

jest.setTimeout(300_000);
