import { DataSourceJsonData } from '@grafana/data';
import { DataQuery } from '@grafana/schema';
import { CONTRACT } from '../contract';

export type PairwiseQueryType = 'minutes' | 'decision' | 'pods';
export type HistogramKind = 'auto' | 'native' | 'classic';
export type WindowMode = 'range' | 'last';
/** evidence: pooled tail observations tested sequentially (the default); reference: the chapter's minute counts. */
export type WindowRule = 'evidence' | 'reference';
/** panel: the Pairwise panel's frames; alerting: numeric series that alert rules and expressions read. */
export type QueryFormat = 'panel' | 'alerting';

/** One Pairwise query. The backend validates every field again; these are the editor's defaults. */
export interface PairwiseQuery extends DataQuery {
  queryType: PairwiseQueryType;
  /** Histogram metric name without the _bucket suffix, e.g. http_request_duration_seconds. */
  metric: string;
  /** Label selector of the baseline fleet, e.g. {app="api",track="baseline"}. */
  baselineSelector: string;
  /** Label selector of the canary fleet, e.g. {app="api",track="canary"}. */
  canarySelector: string;
  histogramKind: HistogramKind;
  /** Quantiles shown for both fleets, as fractions (0.99 = p99). */
  quantiles: number[];
  /** The quantile whose canary/baseline ratio decides each minute. */
  verdictQuantile: number;
  /** ratio <= promoteThreshold: good minute. */
  promoteThreshold: number;
  /** ratio >= rollbackThreshold: bad minute. */
  rollbackThreshold: number;
  /** Decides each window (the windowMinutes minutes ending at a minute). */
  rule: WindowRule;
  /** Evidence rule: budget of false rollbacks per deployment (and per canary-day watched every minute). */
  falseRollback: number;
  /** Evidence rule: budget of promoting a canary that is rollbackThreshold times slower. */
  falsePromote: number;
  /** Minutes in each judged window; every minute shown carries the decision of the window ending at it. */
  windowMinutes: number;
  /** Reference rule: good minutes that promote. */
  goodNeeded: number;
  /** Reference rule: bad minutes that roll back. */
  badLimit: number;
  warmupMinutes: number;
  /** Fewer observations than this beyond a quantile make it "insufficient". */
  minTailObservations: number;
  /** Above 0, good and bad minutes must be beyond sampling noise at this one-sided confidence (e.g. 0.99). */
  significance: number;
  /** The router's canary share (0.05 for 5%), 0 if unknown: a different observed share is flagged. */
  expectedCanaryShare: number;
  /** Traffic parity: a minute's canary share more than this (relative) from the median flags the window. */
  maxShareDrift: number;
  /** How often Prometheus scrapes the fleets, in seconds (dividing a minute): each minute is read whole. */
  scrapeIntervalSeconds: number;
  /** Evidence rule: the fewest minutes a rollback rests on (2 to 4); more holds out pods that pause. */
  minRollbackMinutes: number;
  /** range: every minute of the dashboard time range; last: the last windowMinutes whole minutes. */
  windowMode: WindowMode;
  /**
   * Deployment start: RFC 3339, Unix seconds (or milliseconds, as ${__from} gives them), or a
   * dashboard variable such as $since; empty for none. Earlier minutes are neither shown nor judged.
   */
  since?: string;
  /**
   * The label that tells a fleet's pods apart, for the Pods query's spread and the Decision query's
   * attribution of a rollback to pods (instance, kubernetes_pod_name, ...); empty: "pod".
   */
  podLabel?: string;
  /** Optional load-balancer-side histogram of the same requests (coordinated-omission check). */
  lbMetric?: string;
  /** Load-balancer selectors; empty means the fleet's own selector. */
  lbBaselineSelector?: string;
  lbCanarySelector?: string;
  /**
   * Optional request counter of both fleets (http_requests_total, or a histogram whose count is read): a canary
   * shown to fail more often than its baseline is flagged traffic-parity and never promoted.
   */
  errorsMetric?: string;
  /** The matchers that select its failed requests, added to each fleet's selector; empty: {code=~"5.."}. */
  errorsSelector?: string;
  /**
   * alerting: a wide time series of numbers (time plus one field per entry of `fields`, labelled with the
   * fleets' common labels), what Grafana alert rules and server-side expressions accept. Alert rules get it
   * whatever this says.
   */
  format?: QueryFormat;
  /** Numeric fields of the alerting format; empty: decision_code (max for pods). */
  fields?: string[];
}

/** The verdict fields of a query, whose defaults and limits are pkg/verdict's (src/contract.json). */
export type VerdictFields = Pick<
  PairwiseQuery,
  | 'rule'
  | 'falseRollback'
  | 'falsePromote'
  | 'quantiles'
  | 'verdictQuantile'
  | 'promoteThreshold'
  | 'rollbackThreshold'
  | 'windowMinutes'
  | 'goodNeeded'
  | 'badLimit'
  | 'warmupMinutes'
  | 'minTailObservations'
  | 'significance'
  | 'expectedCanaryShare'
  | 'maxShareDrift'
  | 'scrapeIntervalSeconds'
  | 'minRollbackMinutes'
>;

/**
 * The editor's defaults. The verdict numbers come from the backend's one definition
 * (pkg/verdict.Default), generated into src/contract.json by a Go test that fails when they drift.
 */
export const DEFAULT_QUERY: Omit<PairwiseQuery, 'refId'> = {
  queryType: 'minutes',
  metric: '',
  baselineSelector: '',
  canarySelector: '',
  histogramKind: 'auto',
  ...(CONTRACT.defaults as unknown as VerdictFields),
  windowMode: 'range',
  since: '',
};

/**
 * What a new query is saved with (the data source's getDefaultQuery): what the backend needs to run a
 * sensible query, and nothing of the verdict settings. Those stay unset, so the data source's settings
 * and pkg/verdict's defaults keep reaching the query; the editor shows them as placeholders.
 */
export const NEW_QUERY: Pick<
  PairwiseQuery,
  'queryType' | 'metric' | 'baselineSelector' | 'canarySelector' | 'histogramKind' | 'windowMode'
> = {
  queryType: DEFAULT_QUERY.queryType,
  metric: DEFAULT_QUERY.metric,
  baselineSelector: DEFAULT_QUERY.baselineSelector,
  canarySelector: DEFAULT_QUERY.canarySelector,
  histogramKind: DEFAULT_QUERY.histogramKind,
  windowMode: DEFAULT_QUERY.windowMode,
};

/**
 * jsonData of a Pairwise data source. The connection is Grafana's standard one (the data source's
 * `url`, `basicAuth` and `basicAuthUser`, TLS and custom headers), read by the plugin SDK on the backend.
 */
export interface PairwiseOptions extends DataSourceJsonData {
  /** Seconds a query, retries included, may wait for Prometheus (Grafana's standard key). */
  timeout?: number;
  /** How often Prometheus scrapes the fleets, in seconds: the default of every query (unset: 15). */
  scrapeIntervalSeconds?: number;
  tlsSkipVerify?: boolean;
  tlsAuth?: boolean;
  tlsAuthWithCACert?: boolean;
  serverName?: string;
  httpHeaderName1?: string;
  /** Set by Grafana's Auth component for "Forward OAuth identity", which Pairwise does not offer. */
  oauthPassThru?: boolean;
  /** Legacy: the URL key of Pairwise's first releases, moved to the data source `url` when the settings page opens. */
  prometheusUrl?: string;
  /** Legacy: moved to `timeout`. */
  timeoutSeconds?: number;
  /** Legacy: moved to the data source's `basicAuthUser`, with `basicAuth` on. */
  basicAuthUser?: string;
}

/** secureJsonData: write-only, never sent back to the browser. */
export interface PairwiseSecureJsonData {
  basicAuthPassword?: string;
  /** Sent as `Authorization: Bearer <token>` when basic auth is off. */
  bearerToken?: string;
  tlsCACert?: string;
  tlsClientCert?: string;
  tlsClientKey?: string;
  httpHeaderValue1?: string;
}

/** One entry of the backend's GET resource `metrics`. */
export interface MetricInfo {
  name: string;
  kind: 'native' | 'classic' | string;
}
