// force timezone to UTC to allow tests to work regardless of local timezone
// generally used by snapshots, but can affect specific tests
process.env.TZ = 'UTC';

const base = require('./.config/jest.config');

module.exports = {
  // Jest configuration provided by Grafana scaffolding
  ...base,
  // d3-color 3.x ships only .mjs files: transform them too.
  transform: {
    ...base.transform,
    '^.+\\.mjs$': base.transform['^.+\\.(t|j)sx?$'],
  },
  // A React test that renders the whole query editor takes 3 s alone and more on a
  // loaded 2-core CI machine: the 5 s default made it flaky, not faster.
  testTimeout: 20000,
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/dist/', '<rootDir>/tests/'],
};
