export const appTestIds = {
  root: 'pairwise-app-root',
  config: 'pairwise-app-config',
  enable: 'pairwise-app-enable',
} as const;
