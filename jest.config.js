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
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/dist/', '<rootDir>/tests/'],
};
