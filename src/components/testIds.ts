export const appTestIds = {
  root: 'pairwise-app-root',
  config: 'pairwise-app-config',
  enable: 'pairwise-app-enable',
  alwaysOn: 'pairwise-app-always-on',
} as const;
