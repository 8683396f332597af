// Integration tests start real components (an apiserver, MLServer) on first use, which takes
// longer than Jest's 5 s default. testTimeout is a global Jest option, so the integration
// project sets its own here.
import { jest } from '@jest/globals';

jest.setTimeout(120_000);
