export const dsTestIds = {
  configEditor: {
    url: 'pairwise-config-url',
    timeout: 'pairwise-config-timeout',
    basicAuthUser: 'pairwise-config-basic-user',
    basicAuthPassword: 'pairwise-config-basic-password',
    bearerToken: 'pairwise-config-bearer-token',
    tlsSkipVerify: 'pairwise-config-tls-skip-verify',
    tlsCACert: 'pairwise-config-tls-ca-cert',
    headerName: 'pairwise-config-header-name',
    headerValue: 'pairwise-config-header-value',
  },
  queryEditor: {
    metric: 'pairwise-query-metric',
    baselineSelector: 'pairwise-query-baseline',
    canarySelector: 'pairwise-query-canary',
    quantiles: 'pairwise-query-quantiles',
    lbMetric: 'pairwise-query-lb-metric',
    lbBaselineSelector: 'pairwise-query-lb-baseline',
    lbCanarySelector: 'pairwise-query-lb-canary',
    since: 'pairwise-query-since',
    fields: 'pairwise-query-fields',
  },
} as const;
