import React, { ChangeEvent, useEffect, useId, useMemo, useState } from 'react';
import { css } from '@emotion/css';
import { CoreApp, GrafanaTheme2, QueryEditorProps, SelectableValue } from '@grafana/data';
import { Combobox, ComboboxOption, Field, Input, RadioButtonGroup, useStyles2 } from '@grafana/ui';
import { CONTRACT, CONTRACT_FLAG_TEXT } from '../../contract';
import { DataSource } from '../datasource';
import { dsTestIds } from '../testIds';
import {
  HistogramKind,
  MetricInfo,
  PairwiseOptions,
  PairwiseQuery,
  PairwiseQueryType,
  QueryFormat,
  WindowMode,
  WindowRule,
} from '../types';
import { parseQuantiles, QueryErrors, quantileLabel, validateQuery } from '../validation';

type Props = QueryEditorProps<DataSource, PairwiseQuery, PairwiseOptions>;

const QUERY_TYPES: Array<SelectableValue<PairwiseQueryType>> = [
  { label: 'Minutes', value: 'minutes', description: 'One row per minute with both fleets and the verdict' },
  { label: 'Decision', value: 'decision', description: 'PROMOTE / HOLD / ROLLBACK for the window' },
  { label: 'Pods', value: 'pods', description: 'Spread of per-pod quantiles in each fleet' },
];
const HISTOGRAM_KINDS: Array<SelectableValue<HistogramKind>> = [
  { label: 'Auto', value: 'auto' },
  { label: 'Native', value: 'native' },
  { label: 'Classic', value: 'classic' },
];
const WINDOW_MODES: Array<SelectableValue<WindowMode>> = [
  { label: 'Dashboard range', value: 'range', description: 'Every minute of the range, each with its window decision' },
  { label: 'Last window', value: 'last', description: 'Only the last window of minutes' },
];
const RULES: Array<SelectableValue<WindowRule>> = [
  {
    label: 'Evidence',
    value: 'evidence',
    description: 'Pools tail observations over the window and tests them against a false-rollback budget',
  },
  {
    label: 'Reference',
    value: 'reference',
    description:
      'Counts minutes: bad minutes (ratio at or above the rollback threshold) roll back, good minutes promote',
  },
];

const FORMATS: Array<SelectableValue<QueryFormat>> = [
  { label: 'Panel', value: 'panel', description: "The Pairwise panel's frames: minutes, verdicts, reasons" },
  {
    label: 'Alerting',
    value: 'alerting',
    description:
      "Numeric series that alert rules and expressions read: time and the chosen fields, labelled with the fleets' common labels and field=<name>. Alert rules get this format anyway.",
  },
];

/** The numeric fields an alerting query returns when none are named (the backend's frames.DefaultNumericFields). */
const DEFAULT_FIELDS: Record<PairwiseQueryType, string> = {
  minutes: 'decision_code',
  decision: 'decision_code',
  pods: 'max',
};

/** The evidence fields the Minutes and Decision frames both carry (pkg/frames). */
const EVIDENCE_FIELDS = [
  'decision_code',
  'evidence_statistic',
  'rollback_boundary',
  'promote_statistic',
  'promote_boundary',
  'evidence_minutes',
  'canary_tail',
  'expected_canary_tail',
  'baseline_tail',
  'recent_minutes',
  'recent_statistic',
  'recent_boundary',
  'recent_canary_tail',
  'recent_expected_canary_tail',
];

/** Whether a field is a numeric field of a query type's frame (pkg/frames Minutes, Decision, Pods). */
const NUMERIC_FIELD_OF: Record<PairwiseQueryType, (field: string) => boolean> = {
  minutes: (f) =>
    /^(baseline|canary)_p[0-9.]+$/.test(f) ||
    [
      ...EVIDENCE_FIELDS,
      ...['baseline_rps', 'canary_rps', 'ratio', 'verdict_code', 'warmup', 'baseline_count', 'canary_count'],
      ...['baseline_lower', 'baseline_upper', 'canary_lower', 'canary_upper', 'anchored'],
    ].includes(f),
  decision: (f) =>
    [
      ...EVIDENCE_FIELDS,
      ...['good', 'neutral', 'bad', 'insufficient', 'no_data', 'partial', 'warmup', 'window_minutes'],
      ...['good_needed', 'bad_limit', 'promote_threshold', 'rollback_threshold', 'worst_ratio'],
    ].includes(f),
  pods: (f) => ['min', 'median', 'max', 'pods'].includes(f),
};

/**
 * The fields that still fit after the query type changes: those of the new type's frame, and names
 * no type knows (a typo, or a field newer than this list), which the backend answers with the list of
 * known ones. Undefined when none is left.
 */
export function fieldsFor(queryType: PairwiseQueryType, fields: string[] | undefined): string[] | undefined {
  const known = (f: string) => Object.values(NUMERIC_FIELD_OF).some((of) => of(f));
  const kept = (fields ?? []).filter((f) => NUMERIC_FIELD_OF[queryType](f) || !known(f));
  return kept.length > 0 ? kept : undefined;
}

type TextKey =
  | 'baselineSelector'
  | 'canarySelector'
  | 'since'
  | 'podLabel'
  | 'lbMetric'
  | 'lbBaselineSelector'
  | 'lbCanarySelector'
  | 'errorsMetric'
  | 'errorsSelector';

/** The free-text settings, each checked by validateQuery and run on blur. */
const TEXT_FIELDS: Record<TextKey, { label: string; description?: string; placeholder?: string }> = {
  baselineSelector: { label: 'Baseline selector', placeholder: '{app="api",track="baseline"}' },
  canarySelector: { label: 'Canary selector', placeholder: '{app="api",track="canary"}' },
  since: {
    label: 'Deployment start (optional)',
    description: 'RFC 3339, Unix seconds or a variable such as $since: earlier minutes are left out',
    placeholder: '2026-06-01T11:00:00Z',
  },
  podLabel: {
    label: 'Pod label',
    description: 'The label that tells pods apart, e.g. instance or kubernetes_pod_name',
    placeholder: 'pod',
  },
  lbMetric: {
    label: 'Load-balancer metric (optional)',
    description: `A histogram of the same requests seen by the load balancer, to catch queueing the application does not see. ${CONTRACT_FLAG_TEXT['measurement-divergence']}`,
    placeholder: 'envoy_cluster_upstream_rq_time_seconds',
  },
  lbBaselineSelector: { label: 'Load-balancer baseline selector', description: 'Empty: the baseline selector' },
  lbCanarySelector: { label: 'Load-balancer canary selector', description: 'Empty: the canary selector' },
  errorsMetric: {
    label: 'Request counter (optional)',
    description:
      "A counter of both fleets' requests, to compare their error ratios: a canary shown to fail more often than its baseline is flagged traffic-parity and never promoted (a canary that fails fast can look faster).",
    placeholder: 'http_requests_total',
  },
  errorsSelector: {
    label: 'Failed requests',
    description: "Matchers added to each fleet's selector that select the failed requests",
    placeholder: '{code=~"5.."}',
  },
};

type NumericKey =
  | 'verdictQuantile'
  | 'promoteThreshold'
  | 'rollbackThreshold'
  | 'windowMinutes'
  | 'falseRollback'
  | 'falsePromote'
  | 'goodNeeded'
  | 'badLimit'
  | 'warmupMinutes'
  | 'minTailObservations'
  | 'significance'
  | 'expectedCanaryShare'
  | 'maxShareDrift'
  | 'scrapeIntervalSeconds'
  | 'minRollbackMinutes';

/**
 * Numeric settings; those with a rule are shown only under that rule, the one they decide. Their
 * limits are pkg/verdict's (src/contract.json), checked by validateQuery.
 */
const NUMERIC_FIELDS: Array<{ key: NumericKey; label: string; description: string; step: number; rule?: WindowRule }> =
  [
    { key: 'verdictQuantile', label: 'Verdict quantile', description: 'Decides each minute, e.g. 0.99', step: 0.001 },
    { key: 'promoteThreshold', label: 'Good at ratio ≤', description: 'canary / baseline', step: 0.01 },
    { key: 'rollbackThreshold', label: 'Bad at ratio ≥', description: 'canary / baseline', step: 0.01 },
    { key: 'windowMinutes', label: 'Window (min)', description: 'Minutes each decision looks back', step: 1 },
    {
      key: 'falseRollback',
      label: 'False-rollback budget',
      description: 'Per deployment, e.g. 0.001',
      step: 0.001,
      rule: 'evidence',
    },
    {
      key: 'minRollbackMinutes',
      label: 'Min rollback minutes',
      description: '2 to 4; more holds out pausing pods',
      step: 1,
      rule: 'evidence',
    },
    {
      key: 'falsePromote',
      label: 'False-promote budget',
      description: 'Of a canary this much slower',
      step: 0.01,
      rule: 'evidence',
    },
    { key: 'goodNeeded', label: 'Good needed', description: 'Minutes to PROMOTE', step: 1, rule: 'reference' },
    { key: 'badLimit', label: 'Bad limit', description: 'Minutes to ROLLBACK', step: 1, rule: 'reference' },
    { key: 'warmupMinutes', label: 'Warm-up (min)', description: 'Not counted at start', step: 1 },
    { key: 'minTailObservations', label: 'Min tail observations', description: 'Below: insufficient', step: 1 },
    { key: 'significance', label: 'Significance', description: '0 off; 0.99: beyond noise', step: 0.01 },
    { key: 'expectedCanaryShare', label: 'Expected canary share', description: '0 unknown; 0.05 for 5%', step: 0.01 },
    {
      key: 'maxShareDrift',
      label: 'Max share drift',
      description: 'Traffic parity; 0.5: ±50% of the median',
      step: 0.05,
    },
    {
      key: 'scrapeIntervalSeconds',
      label: 'Scrape interval (s)',
      description: "The fleets' scrape interval",
      step: 1,
    },
  ];

/** Loads histogram metrics from the backend; on failure the metric field stays free text. */
function useMetrics(datasource: DataSource): { metrics: MetricInfo[]; failed: boolean } {
  const [state, setState] = useState<{ metrics: MetricInfo[]; failed: boolean }>({ metrics: [], failed: false });
  useEffect(() => {
    let cancelled = false;
    datasource
      .getMetrics()
      .then((metrics) => !cancelled && setState({ metrics, failed: false }))
      .catch(() => !cancelled && setState({ metrics: [], failed: true }));
    return () => {
      cancelled = true;
    };
  }, [datasource]);
  return state;
}

/** The fields every query needs; their "enter a value" errors wait until the user has been there. */
type RequiredKey = 'metric' | 'baselineSelector' | 'canarySelector';
const REQUIRED: RequiredKey[] = ['metric', 'baselineSelector', 'canarySelector'];

/** A saved value that stands for "unset": missing, null (a cleared number JSON wrote), NaN, or no quantiles. */
function unset(key: string, value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    (typeof value === 'number' && Number.isNaN(value)) ||
    (key === 'quantiles' && Array.isArray(value) && value.length === 0)
  );
}

/** The query as the editor shows and checks it: the saved fields over the data source's defaults. */
function withDefaults(defaults: Partial<PairwiseQuery>, saved: PairwiseQuery): PairwiseQuery {
  const set = Object.entries(saved).filter(([key, value]) => !unset(key, value));
  return { ...defaults, ...Object.fromEntries(set) } as PairwiseQuery;
}

const sameList = (a: Array<string | number>, b: Array<string | number>) =>
  a.length === b.length && a.every((v, i) => v === b[i]);

const parseFields = (text: string) =>
  text
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean);

/**
 * A text input's text, kept while the user types and set again from the query when the query's value
 * changes from outside (undo, another editor) to one the text does not read as.
 */
function useSyncedText<T extends string | number>(
  value: T[] | undefined,
  parse: (text: string) => T[] | undefined,
  onReset?: () => void
): [string, (text: string) => void] {
  const shown = (value ?? []).join(', ');
  const [text, setText] = useState(shown);
  const [seen, setSeen] = useState(shown);
  if (shown !== seen) {
    setSeen(shown);
    const parsed = parse(text);
    if (!parsed || !sameList(parsed, value ?? [])) {
      setText(shown);
      onReset?.();
    }
  }
  return [text, setText];
}

export function QueryEditor({ query: saved, onChange, onRunQuery, datasource, app }: Props) {
  const styles = useStyles2(getStyles);
  const id = useId();
  // The defaults a field shows and validation reads are the data source's (its scrape interval), not
  // frozen into the query: onChange writes the saved query and the changed field only, so unset
  // fields keep following the data source's and the backend's defaults.
  const defaults = useMemo(() => datasource.getEditorDefaults(), [datasource]);
  const query: PairwiseQuery = useMemo(() => withDefaults(defaults, saved), [defaults, saved]);
  // Alert rules get the alerting format whatever the query says: an unset format is shown as that.
  const format: QueryFormat = query.format ?? (app === CoreApp.UnifiedAlerting ? 'alerting' : 'panel');
  const errors = useMemo(() => validateQuery(query), [query]);
  const { metrics, failed } = useMetrics(datasource);
  const [quantilesError, setQuantilesError] = useState<string | undefined>();
  const [quantilesText, setQuantilesText] = useSyncedText(saved.quantiles, parseQuantiles, () =>
    setQuantilesError(undefined)
  );
  const [fieldsText, setFieldsText] = useSyncedText(saved.fields, parseFields);
  // Number fields whose text is not a number (the browser reports it as empty, with badInput).
  const [notNumbers, setNotNumbers] = useState<Partial<Record<NumericKey, boolean>>>({});
  const [touched, setTouched] = useState<Partial<Record<RequiredKey, boolean>>>({});

  const hasContent = REQUIRED.some((key) => (saved[key] ?? '').trim() !== '');
  const shown: QueryErrors = { ...errors };
  for (const key of REQUIRED) {
    if (!hasContent && !touched[key]) {
      delete shown[key];
    }
  }
  for (const key of Object.keys(notNumbers) as NumericKey[]) {
    if (notNumbers[key]) {
      shown[key] = 'Enter a number, or leave the field empty for the default.';
    }
  }
  const touch = (key: RequiredKey) => !touched[key] && setTouched({ ...touched, [key]: true });

  /** Sends the saved query with `patch` applied; a key set to undefined is removed. */
  const update = (patch: Partial<PairwiseQuery>, run = false) => {
    const next = Object.fromEntries(
      Object.entries({ ...saved, ...patch }).filter(([key, value]) => value !== undefined || !(key in patch))
    ) as unknown as PairwiseQuery;
    onChange(next);
    if (run && Object.keys(validateQuery(withDefaults(defaults, next))).length === 0) {
      onRunQuery();
    }
  };
  const runIfValid = () => {
    if (Object.keys(errors).length === 0 && !Object.values(notNumbers).some(Boolean) && !quantilesError) {
      onRunQuery();
    }
  };

  /** runOnChange: a field shown only while wrong, which goes once corrected and so is never left. */
  const textField = (key: TextKey, runOnChange = false) => {
    const { label, description, placeholder } = TEXT_FIELDS[key];
    const required = (REQUIRED as string[]).includes(key);
    return (
      <Field
        label={label}
        description={description}
        invalid={Boolean(shown[key])}
        error={shown[key]}
        className={styles.grow}
      >
        <Input
          id={`${id}-${key}`}
          data-testid={dsTestIds.queryEditor[key]}
          value={query[key] ?? ''}
          placeholder={placeholder}
          onChange={(e: ChangeEvent<HTMLInputElement>) => update({ [key]: e.currentTarget.value }, runOnChange)}
          onBlur={() => {
            if (required) {
              touch(key as RequiredKey);
            }
            runIfValid();
          }}
        />
      </Field>
    );
  };

  const numberChange =
    (key: NumericKey, runOnChange = false) =>
    (e: ChangeEvent<HTMLInputElement>) => {
      const text = e.currentTarget.value;
      if (text === '' && e.currentTarget.validity?.badInput) {
        // "1e", "-": not a number yet. The query keeps its value; the field says so and nothing runs.
        setNotNumbers({ ...notNumbers, [key]: true });
        return;
      }
      if (notNumbers[key]) {
        setNotNumbers({ ...notNumbers, [key]: false });
      }
      // Empty: unset, the data source's default applies (shown as the placeholder).
      update({ [key]: text === '' ? undefined : Number(text) }, runOnChange);
    };

  const metricOptions: Array<ComboboxOption<string>> = metrics.map((m) => ({
    value: m.name,
    label: m.name,
    description: m.kind === 'native' ? 'native histogram' : m.kind === 'classic' ? 'classic histogram' : m.kind,
  }));

  return (
    <div className={styles.editor}>
      <Field label="Query type">
        <RadioButtonGroup<PairwiseQueryType>
          options={QUERY_TYPES}
          value={query.queryType}
          // Fields of the old type's frame would make the alerting query fail: they go.
          onChange={(queryType) => update({ queryType, fields: fieldsFor(queryType, saved.fields) }, true)}
        />
      </Field>
      <div className={styles.row}>
        <Field
          label="Histogram metric"
          description={failed ? 'Metric list unavailable: type the name' : 'Without the _bucket suffix'}
          invalid={Boolean(shown.metric)}
          error={shown.metric}
          className={styles.grow}
        >
          {failed || metricOptions.length === 0 ? (
            <Input
              id={`${id}-metric`}
              data-testid={dsTestIds.queryEditor.metric}
              value={query.metric}
              placeholder="http_request_duration_seconds"
              onChange={(e: ChangeEvent<HTMLInputElement>) => update({ metric: e.currentTarget.value })}
              onBlur={() => {
                touch('metric');
                runIfValid();
              }}
            />
          ) : (
            <Combobox<string>
              id={`${id}-metric`}
              data-testid={dsTestIds.queryEditor.metric}
              options={metricOptions}
              value={query.metric || null}
              createCustomValue
              placeholder="http_request_duration_seconds"
              onChange={(option) => update({ metric: option.value }, true)}
              onBlur={() => touch('metric')}
            />
          )}
        </Field>
        <Field label="Histogram kind">
          <RadioButtonGroup<HistogramKind>
            options={HISTOGRAM_KINDS}
            value={query.histogramKind}
            onChange={(histogramKind) => update({ histogramKind }, true)}
          />
        </Field>
      </div>
      <div className={styles.row}>
        {textField('baselineSelector')}
        {textField('canarySelector')}
      </div>
      {/* The backend reads the pod label of every query: a wrong one shows whatever the type. */}
      {query.queryType === 'pods' || query.queryType === 'decision' ? (
        <div className={styles.row}>{textField('podLabel')}</div>
      ) : shown.podLabel ? (
        <div className={styles.row}>{textField('podLabel', true)}</div>
      ) : null}
      <div className={styles.row}>
        <Field
          label="Quantiles"
          description={query.quantiles.map(quantileLabel).join(', ')}
          invalid={Boolean(quantilesError ?? shown.quantiles)}
          error={quantilesError ?? shown.quantiles}
        >
          <Input
            id={`${id}-quantiles`}
            data-testid={dsTestIds.queryEditor.quantiles}
            width={32}
            value={quantilesText}
            placeholder={(defaults.quantiles ?? []).join(', ')}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setQuantilesText(e.currentTarget.value)}
            onBlur={() => {
              const parsed = parseQuantiles(quantilesText);
              if (!parsed) {
                setQuantilesError('Write quantiles as numbers separated by commas, e.g. 0.5, 0.99, 0.999.');
                return;
              }
              setQuantilesError(undefined);
              if (sameList(parsed, saved.quantiles ?? [])) {
                runIfValid();
                return;
              }
              // Empty: unset, the default quantiles apply (shown as the placeholder).
              update({ quantiles: parsed.length > 0 ? parsed : undefined }, true);
            }}
          />
        </Field>
        <Field label="Minutes shown">
          <RadioButtonGroup<WindowMode>
            options={WINDOW_MODES}
            value={query.windowMode}
            onChange={(windowMode) => update({ windowMode }, true)}
          />
        </Field>
        {textField('since')}
      </div>
      <div className={styles.row}>
        <Field label="Window rule" description={RULES.find((r) => r.value === query.rule)?.description}>
          <RadioButtonGroup<WindowRule>
            options={RULES}
            value={query.rule}
            onChange={(rule) => update({ rule }, true)}
          />
        </Field>
      </div>
      <div className={styles.row}>
        <Field label="Format" description={FORMATS.find((f) => f.value === format)?.description}>
          <RadioButtonGroup<QueryFormat>
            options={FORMATS}
            value={format}
            onChange={(next) => update({ format: next }, true)}
          />
        </Field>
        {format === 'alerting' ? (
          <Field
            label="Numeric fields"
            description={`Comma-separated, one series each; empty: ${DEFAULT_FIELDS[query.queryType]}. Decision codes: ${CONTRACT.decisions.map((d) => `${d.code} ${d.name}`).join(', ')}`}
            className={styles.grow}
          >
            <Input
              id={`${id}-fields`}
              data-testid={dsTestIds.queryEditor.fields}
              value={fieldsText}
              placeholder={DEFAULT_FIELDS[query.queryType]}
              onChange={(e: ChangeEvent<HTMLInputElement>) => setFieldsText(e.currentTarget.value)}
              onBlur={() => {
                const fields = parseFields(fieldsText);
                if (sameList(fields, saved.fields ?? [])) {
                  runIfValid();
                  return;
                }
                update({ fields: fields.length > 0 ? fields : undefined }, true);
              }}
            />
          </Field>
        ) : null}
      </div>
      <div className={styles.row}>
        {/* Another rule's setting shows only when it is wrong: the backend checks it whatever the rule. */}
        {NUMERIC_FIELDS.filter((f) => !f.rule || f.rule === query.rule || shown[f.key]).map(
          ({ key, label, description, step, rule }) => (
            <Field
              key={key}
              label={label}
              description={
                rule && rule !== query.rule
                  ? `Not used by the ${query.rule} rule, but checked: correct it or clear it for the default`
                  : description
              }
              invalid={Boolean(shown[key])}
              error={shown[key]}
            >
              <Input
                id={`${id}-${key}`}
                aria-label={label}
                type="number"
                width={16}
                step={CONTRACT.limits[key]?.whole ? 1 : step}
                min={CONTRACT.limits[key]?.min}
                max={CONTRACT.limits[key]?.max}
                // Unset: empty, with the default applying shown as the placeholder.
                value={unset(key, saved[key]) ? '' : saved[key]}
                placeholder={defaults[key] === undefined ? undefined : String(defaults[key])}
                onChange={numberChange(key, Boolean(rule && rule !== query.rule))}
                onBlur={runIfValid}
              />
            </Field>
          )
        )}
      </div>
      <div className={styles.row}>
        {textField('lbMetric')}
        {query.lbMetric ? (
          <>
            {textField('lbBaselineSelector')}
            {textField('lbCanarySelector')}
          </>
        ) : null}
      </div>
      <div className={styles.row}>
        {textField('errorsMetric')}
        {query.errorsMetric ? textField('errorsSelector') : null}
      </div>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  editor: css({
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(1),
  }),
  row: css({
    display: 'flex',
    flexWrap: 'wrap',
    gap: theme.spacing(2),
    alignItems: 'flex-start',
  }),
  grow: css({
    flex: '1 1 0',
    minWidth: theme.spacing(30),
  }),
});
