// Three projects: `unit` needs nothing started; `integration` gets a harness that starts real
// components (Redis, kube-apiserver + etcd, MinIO, MLServer, Chromium) on demand, only those the
// selected tests ask for, and stops them all at the end; `cluster` gets the same harness and a
// real single-node Kubernetes cluster running the project's images.
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

const common = {
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testEnvironment: 'node',
};

export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/harness/jest-global-setup.mjs',
      globalTeardown: '<rootDir>/test/harness/jest-global-teardown.mjs',
      // testTimeout is global-only in Jest; this sets 120 s for this project alone.
      setupFilesAfterEnv: ['<rootDir>/test/harness/jest-integration-timeout.ts'],
    },
    {
      // Run on their own (`make test-cluster`, the second half of `make test`): the cluster lives
      // only as long as this project's run, and no other test shares the machine with it.
      ...common,
      displayName: 'cluster',
      testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
      globalSetup: '<rootDir>/test/harness/jest-global-setup.mjs',
      globalTeardown: '<rootDir>/test/harness/jest-global-teardown.mjs',
      setupFilesAfterEnv: ['<rootDir>/test/harness/jest-cluster-timeout.ts'],
    },
  ],
};
