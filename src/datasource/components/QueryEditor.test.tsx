import React from 'react';
import { act, cleanup, fireEvent, render, RenderResult, screen, waitFor } from '@testing-library/react';
import { CoreApp, DataSourceInstanceSettings } from '@grafana/data';
import { DataSource } from '../datasource';
import { dsTestIds } from '../testIds';
import { DEFAULT_QUERY, MetricInfo, PairwiseOptions, PairwiseQuery } from '../types';
import { QueryEditor } from './QueryEditor';

/** A real Pairwise data source (its getDefaultQuery), with the backend's metrics resource stubbed. */
function createDataSource(
  jsonData: PairwiseOptions = {},
  loadMetrics: () => Promise<unknown> = () => Promise.reject(new Error('metrics resource unavailable'))
): DataSource {
  const datasource = new DataSource({
    id: 1,
    uid: 'pw',
    type: 'pairwise-canary-datasource',
    name: 'Pairwise',
    jsonData,
  } as unknown as DataSourceInstanceSettings<PairwiseOptions>);
  jest.spyOn(datasource, 'getMetrics').mockImplementation(loadMetrics as () => Promise<MetricInfo[]>);
  return datasource;
}

/** Props for a query as saved (fields missing from an older query stay missing), or a full new one. */
function createSavedProps(query: Partial<PairwiseQuery>, datasource: DataSource = createDataSource()) {
  return {
    datasource,
    query: { refId: 'A', ...query } as PairwiseQuery,
    onChange: jest.fn(),
    onRunQuery: jest.fn(),
  };
}

function createProps(
  overrides: Partial<PairwiseQuery> = {},
  loadMetrics?: () => Promise<unknown>
): ReturnType<typeof createSavedProps> {
  return createSavedProps({ ...DEFAULT_QUERY, ...overrides }, createDataSource({}, loadMetrics));
}

/** Renders and lets the metrics request settle, so state updates happen inside act(). */
async function renderEditor(props: ReturnType<typeof createSavedProps>): Promise<RenderResult> {
  let result: RenderResult | undefined;
  await act(async () => {
    result = render(<QueryEditor {...props} />);
  });
  return result as RenderResult;
}

/** The query the editor last sent. */
const lastQuery = (props: ReturnType<typeof createSavedProps>): PairwiseQuery => props.onChange.mock.calls.at(-1)[0];

const valid = {
  metric: 'http_request_duration_seconds',
  baselineSelector: '{track="baseline"}',
  canarySelector: '{track="canary"}',
};

describe('QueryEditor', () => {
  it('shows inline messages for a malformed selector and an empty metric', async () => {
    const props = createProps({ baselineSelector: 'app="api"', canarySelector: '{track="canary"}' });
    await renderEditor(props);
    expect(await screen.findByText(/wrapped in braces/)).toBeInTheDocument();
    expect(screen.getByText(/Enter the histogram metric/)).toBeInTheDocument();
    expect(screen.queryByText(/Baseline and canary selectors are identical/)).not.toBeInTheDocument();
  });

  it('falls back to a free-text metric when the metrics resource fails', async () => {
    const props = createProps({ metric: '' });
    await renderEditor(props);
    await waitFor(() => expect(props.datasource.getMetrics).toHaveBeenCalled());
    const input = await screen.findByTestId(dsTestIds.queryEditor.metric);
    fireEvent.change(input, { target: { value: 'http_request_duration_seconds' } });
    expect(props.onChange).toHaveBeenLastCalledWith(
      expect.objectContaining({ metric: 'http_request_duration_seconds' })
    );
  });

  it('offers the metrics of the backend resource in a combobox', async () => {
    // Combobox measures option text on a canvas, which jsdom lacks.
    jest
      .spyOn(HTMLCanvasElement.prototype, 'getContext')
      .mockReturnValue({ measureText: () => ({ width: 100 }) } as unknown as CanvasRenderingContext2D);
    const props = createProps({}, () => Promise.resolve([{ name: 'http_request_duration_seconds', kind: 'native' }]));
    await renderEditor(props);
    expect(screen.getByRole('combobox')).toBeInTheDocument();
  });

  it('runs the query only when it is valid', async () => {
    const props = createProps({
      metric: 'http_request_duration_seconds',
      baselineSelector: '{track="baseline"}',
      canarySelector: '{track="canary"}',
    });
    await renderEditor(props);
    fireEvent.blur(screen.getByTestId(dsTestIds.queryEditor.canarySelector));
    expect(props.onRunQuery).toHaveBeenCalledTimes(1);

    const invalid = createProps({
      metric: 'http_request_duration_seconds',
      baselineSelector: '{',
      canarySelector: '{track="canary"}',
    });
    await renderEditor(invalid);
    fireEvent.blur(screen.getAllByTestId(dsTestIds.queryEditor.canarySelector)[1]);
    expect(invalid.onRunQuery).not.toHaveBeenCalled();
  });

  it('parses the quantile list on blur and rejects words', async () => {
    const props = createProps();
    await renderEditor(props);
    const input = screen.getByTestId(dsTestIds.queryEditor.quantiles);
    fireEvent.change(input, { target: { value: '0.5, 0.99, 0.999' } });
    fireEvent.blur(input);
    expect(props.onChange).toHaveBeenLastCalledWith(expect.objectContaining({ quantiles: [0.5, 0.99, 0.999] }));
    fireEvent.change(input, { target: { value: '0.5, lots' } });
    fireEvent.blur(input);
    expect(screen.getByText(/numbers separated by commas/)).toBeInTheDocument();
  });

  it('shows the settings of the chosen rule only', async () => {
    const props = createProps();
    await renderEditor(props);
    expect(screen.getByRole('radio', { name: 'Evidence' })).toBeChecked();
    expect(screen.getByLabelText('False-rollback budget')).toHaveValue(0.001);
    expect(screen.queryByLabelText('Good needed')).not.toBeInTheDocument();
    fireEvent.click(screen.getByRole('radio', { name: 'Reference' }));
    expect(props.onChange).toHaveBeenLastCalledWith(expect.objectContaining({ rule: 'reference' }));

    cleanup();
    const reference = createProps({ rule: 'reference' });
    await renderEditor(reference);
    expect(screen.getByLabelText('Good needed')).toBeInTheDocument();
    expect(screen.queryByLabelText('False-rollback budget')).not.toBeInTheDocument();
  });

  it('takes a deployment start and says what it accepts', async () => {
    const props = createProps({ since: 'last tuesday' });
    await renderEditor(props);
    expect(screen.getByText(/Write the deployment start as RFC 3339/)).toBeInTheDocument();
    fireEvent.change(screen.getByTestId(dsTestIds.queryEditor.since), { target: { value: '$since' } });
    expect(props.onChange).toHaveBeenLastCalledWith(expect.objectContaining({ since: '$since' }));
  });

  it('flags a rollback threshold below the promote threshold', async () => {
    await renderEditor(createProps({ promoteThreshold: 1.2, rollbackThreshold: 1.1 }));
    expect(
      screen.getByText(/rollback threshold is a ratio above 1 \(a heavier tail\) and above the promote threshold/)
    ).toBeInTheDocument();
  });

  it('offers the alerting format and its numeric fields', async () => {
    const props = createProps({
      metric: 'm',
      baselineSelector: '{a="b"}',
      canarySelector: '{a="c"}',
      queryType: 'decision',
    });
    await renderEditor(props);
    expect(screen.queryByTestId(dsTestIds.queryEditor.fields)).not.toBeInTheDocument();
    fireEvent.click(screen.getByLabelText('Alerting'));
    expect(props.onChange).toHaveBeenLastCalledWith(expect.objectContaining({ format: 'alerting' }));
    cleanup();
    const alerting = createProps({ ...props.query, format: 'alerting' });
    await renderEditor(alerting);
    const fields = screen.getByTestId(dsTestIds.queryEditor.fields);
    expect(fields).toHaveAttribute('placeholder', 'decision_code');
    fireEvent.change(fields, { target: { value: 'decision_code, evidence_statistic,' } });
    fireEvent.blur(fields);
    expect(alerting.onChange).toHaveBeenLastCalledWith(
      expect.objectContaining({ fields: ['decision_code', 'evidence_statistic'] })
    );
  });

  it("shows the data source's defaults for fields a saved query lacks, and writes only the field changed", async () => {
    // A query saved before scrapeIntervalSeconds existed, on a data source whose fleets are scraped every 30 s.
    const props = createSavedProps(valid, createDataSource({ scrapeIntervalSeconds: 30 }));
    await renderEditor(props);
    const scrape = screen.getByLabelText('Scrape interval (s)');
    expect(scrape).toHaveValue(null);
    expect(scrape).toHaveAttribute('placeholder', '30');
    expect(screen.getByLabelText('Window (min)')).toHaveAttribute('placeholder', '60');
    expect(screen.queryAllByRole('alert')).toHaveLength(0);

    fireEvent.change(screen.getByLabelText(/^Histogram metric/), { target: { value: 'grpc_server_handling_seconds' } });
    // The saved query and the change, nothing else: unset fields keep following the defaults.
    expect(lastQuery(props)).toEqual({ refId: 'A', ...valid, metric: 'grpc_server_handling_seconds' });
  });

  it("opens a new query, which Grafana fills from getDefaultQuery, with the data source's defaults unset", async () => {
    const datasource = createDataSource({ scrapeIntervalSeconds: 30 });
    const props = createSavedProps({ ...datasource.getDefaultQuery(CoreApp.PanelEditor), ...valid }, datasource);
    await renderEditor(props);
    // The data source's scrape interval and pkg/verdict's defaults apply, as placeholders, not as values.
    const scrape = screen.getByLabelText('Scrape interval (s)');
    expect(scrape).toHaveValue(null);
    expect(scrape).toHaveAttribute('placeholder', '30');
    expect(screen.getByLabelText('False-rollback budget')).toHaveValue(null);
    expect(screen.getByLabelText('False-rollback budget')).toHaveAttribute('placeholder', '0.001');
    fireEvent.blur(screen.getByLabelText('Baseline selector'));
    expect(props.onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('sets the pod label of Pods and Decision queries, as a Prometheus label name', async () => {
    const props = createProps({ ...valid, queryType: 'pods' });
    const { rerender } = await renderEditor(props);
    const input = screen.getByLabelText(/^Pod label/);
    expect(input).toBe(screen.getByTestId(dsTestIds.queryEditor.podLabel));
    expect(input).toHaveAttribute('placeholder', 'pod');
    fireEvent.change(input, { target: { value: 'kubernetes_pod_name' } });
    expect(lastQuery(props)).toMatchObject({ queryType: 'pods', podLabel: 'kubernetes_pod_name' });
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    fireEvent.blur(input);
    expect(props.onRunQuery).toHaveBeenCalledTimes(1);

    fireEvent.change(input, { target: { value: 'pod name' } });
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    expect(screen.getByRole('alert')).toHaveTextContent(/A label name has letters, digits and _/);
    fireEvent.blur(input);
    expect(props.onRunQuery).toHaveBeenCalledTimes(1);

    cleanup();
    await renderEditor(createProps({ ...valid, queryType: 'decision', podLabel: 'instance' }));
    expect(screen.getByLabelText(/^Pod label/)).toHaveValue('instance');
    cleanup();
    // The minutes query does not read pods.
    await renderEditor(createProps({ ...valid, queryType: 'minutes' }));
    expect(screen.queryByLabelText(/^Pod label/)).not.toBeInTheDocument();
  });

  it('shows a wrong setting of the rule not chosen, which the backend checks too, and runs once it is cleared', async () => {
    // Typed under the evidence rule (out of range), then the reference rule chosen.
    const props = createProps({ ...valid, minRollbackMinutes: 5, rule: 'reference' });
    const { rerender } = await renderEditor(props);
    const input = screen.getByLabelText('Min rollback minutes');
    expect(input).toHaveValue(5);
    expect(screen.getByRole('alert')).toHaveTextContent(/fewest minutes a rollback rests on/);
    expect(screen.getByText(/Not used by the reference rule, but checked/)).toBeInTheDocument();
    fireEvent.blur(screen.getByLabelText('Window (min)'));
    expect(props.onRunQuery).not.toHaveBeenCalled();

    // Cleared: the default applies, the field goes with its message, and the query runs.
    fireEvent.change(input, { target: { value: '' } });
    expect(lastQuery(props)).not.toHaveProperty('minRollbackMinutes');
    expect(props.onRunQuery).toHaveBeenCalledTimes(1);
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    expect(screen.queryByLabelText('Min rollback minutes')).not.toBeInTheDocument();
    expect(screen.queryAllByRole('alert')).toHaveLength(0);
    // A valid value of the other rule stays hidden and saved as it is.
    cleanup();
    const kept = createProps({ ...valid, minRollbackMinutes: 3, rule: 'reference' });
    await renderEditor(kept);
    expect(screen.queryByLabelText('Min rollback minutes')).not.toBeInTheDocument();
    fireEvent.blur(screen.getByLabelText('Window (min)'));
    expect(kept.onRunQuery).toHaveBeenCalledTimes(1);
    expect(kept.onChange).not.toHaveBeenCalled();
  });

  it('starts an alert rule query in the alerting format, with its numeric fields', async () => {
    const datasource = createDataSource();
    const props = createSavedProps({ ...datasource.getDefaultQuery(CoreApp.UnifiedAlerting), ...valid }, datasource);
    await renderEditor({ ...props, app: CoreApp.UnifiedAlerting } as typeof props);
    expect(screen.getByRole('radio', { name: 'Alerting' })).toBeChecked();
    expect(screen.getByTestId(dsTestIds.queryEditor.fields)).toHaveAttribute('placeholder', 'decision_code');

    // A query saved without a format is alerting in an alert rule (the backend makes it so anyway).
    cleanup();
    const older = createSavedProps({ ...DEFAULT_QUERY, ...valid });
    await renderEditor({ ...older, app: CoreApp.UnifiedAlerting } as typeof older);
    expect(screen.getByRole('radio', { name: 'Alerting' })).toBeChecked();
    expect(screen.getByTestId(dsTestIds.queryEditor.fields)).toBeInTheDocument();
  });

  it('clears the numeric fields that the newly chosen query type does not have', async () => {
    const props = createProps({
      ...valid,
      queryType: 'minutes',
      format: 'alerting',
      fields: ['decision_code', 'ratio', 'canary_p99', 'evidence_statistic'],
    });
    await renderEditor(props);
    fireEvent.click(screen.getByRole('radio', { name: 'Decision' }));
    expect(lastQuery(props)).toMatchObject({ queryType: 'decision', fields: ['decision_code', 'evidence_statistic'] });
    fireEvent.click(screen.getByRole('radio', { name: 'Pods' }));
    expect(lastQuery(props).queryType).toBe('pods');
    expect(lastQuery(props)).not.toHaveProperty('fields');
  });

  it('unsets a cleared number field: no key, the default as placeholder, no error', async () => {
    const props = createProps({ ...valid, windowMinutes: 30 });
    const { rerender } = await renderEditor(props);
    fireEvent.change(screen.getByLabelText('Window (min)'), { target: { value: '' } });
    const cleared = lastQuery(props);
    expect(cleared).not.toHaveProperty('windowMinutes');
    expect(JSON.parse(JSON.stringify(cleared))).not.toHaveProperty('windowMinutes');

    rerender(<QueryEditor {...props} query={cleared} />);
    expect(screen.getByLabelText('Window (min)')).toHaveValue(null);
    expect(screen.getByLabelText('Window (min)')).toHaveAttribute('placeholder', '60');
    expect(screen.queryAllByRole('alert')).toHaveLength(0);
    fireEvent.blur(screen.getByLabelText('Window (min)'));
    expect(props.onRunQuery).toHaveBeenCalledTimes(1);
  });

  it('keeps an invalid number inline and does not run it', async () => {
    const props = createProps({ ...valid });
    const { rerender } = await renderEditor(props);
    const significance = screen.getByLabelText('Significance');
    fireEvent.change(significance, { target: { value: '0.3' } });
    expect(lastQuery(props).significance).toBe(0.3);
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    expect(screen.getByRole('alert')).toHaveTextContent(/Significance is 0 \(off\) or a confidence/);
    fireEvent.blur(significance);
    expect(props.onRunQuery).not.toHaveBeenCalled();

    // Text the browser cannot read as a number ("1e") comes as an empty value with badInput: not "unset".
    cleanup();
    const typing = createProps({ ...valid, windowMinutes: 30 });
    await renderEditor(typing);
    const input = screen.getByLabelText('Window (min)');
    Object.defineProperty(input, 'validity', { configurable: true, value: { badInput: true } });
    fireEvent.change(input, { target: { value: '' } });
    expect(typing.onChange).not.toHaveBeenCalled();
    expect(screen.getByRole('alert')).toHaveTextContent(/Enter a number/);
    fireEvent.blur(input);
    expect(typing.onRunQuery).not.toHaveBeenCalled();
  });

  it('shows the quantiles and fields of the query when it changes from outside', async () => {
    const props = createProps({
      ...valid,
      format: 'alerting',
      quantiles: [0.5, 0.99, 0.999],
      fields: ['decision_code'],
    });
    const { rerender } = await renderEditor(props);
    const quantiles = screen.getByTestId(dsTestIds.queryEditor.quantiles);
    fireEvent.change(quantiles, { target: { value: 'p50, p99.9' } });
    fireEvent.blur(quantiles);
    expect(lastQuery(props).quantiles).toEqual([0.5, 0.999]);
    // The query now holds what the text says: the user's text stays.
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    expect(quantiles).toHaveValue('p50, p99.9');

    fireEvent.change(quantiles, { target: { value: '0.5, lots' } });
    fireEvent.blur(quantiles);
    expect(screen.getByText(/numbers separated by commas/)).toBeInTheDocument();

    // Undo, or another editor: the text follows the query, and the message about the old text goes.
    rerender(
      <QueryEditor {...props} query={{ ...props.query, quantiles: [0.9, 0.99], fields: ['evidence_statistic'] }} />
    );
    expect(quantiles).toHaveValue('0.9, 0.99');
    expect(screen.queryByText(/numbers separated by commas/)).not.toBeInTheDocument();
    expect(screen.getByTestId(dsTestIds.queryEditor.fields)).toHaveValue('evidence_statistic');
  });

  it('links every label to its input', async () => {
    await renderEditor(createProps({ lbMetric: 'envoy_cluster_upstream_rq_time_seconds' }));
    expect(screen.getByLabelText('Baseline selector')).toBe(screen.getByTestId(dsTestIds.queryEditor.baselineSelector));
    expect(screen.getByLabelText('Canary selector')).toBe(screen.getByTestId(dsTestIds.queryEditor.canarySelector));
    expect(screen.getByLabelText(/^Histogram metric/)).toBe(screen.getByTestId(dsTestIds.queryEditor.metric));
    expect(screen.getByLabelText(/^Quantiles/)).toBe(screen.getByTestId(dsTestIds.queryEditor.quantiles));
    expect(screen.getByLabelText(/^Deployment start/)).toBe(screen.getByTestId(dsTestIds.queryEditor.since));
    expect(screen.getByLabelText(/^Load-balancer metric/)).toBe(screen.getByTestId(dsTestIds.queryEditor.lbMetric));
    expect(screen.getByLabelText(/^Load-balancer canary selector/)).toBe(
      screen.getByTestId(dsTestIds.queryEditor.lbCanarySelector)
    );
  });

  it('asks for the failed requests only once a request counter is set', async () => {
    const props = createProps({ ...valid });
    const { rerender } = await renderEditor(props);
    expect(screen.queryByLabelText(/^Failed requests/)).not.toBeInTheDocument();
    const counter = screen.getByLabelText(/^Request counter/);
    expect(counter).toBe(screen.getByTestId(dsTestIds.queryEditor.errorsMetric));
    fireEvent.change(counter, { target: { value: 'http_requests_total' } });
    expect(lastQuery(props)).toMatchObject({ errorsMetric: 'http_requests_total' });
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    const failed = screen.getByLabelText(/^Failed requests/);
    expect(failed).toBe(screen.getByTestId(dsTestIds.queryEditor.errorsSelector));
    expect(failed).toHaveAttribute('placeholder', '{code=~"5.."}');
    fireEvent.change(failed, { target: { value: '{code="500"} or up' } });
    rerender(<QueryEditor {...props} query={lastQuery(props)} />);
    expect(screen.getByRole('alert')).toBeInTheDocument();
  });

  it('says nothing of the required fields of a new, empty query until one is touched', async () => {
    const datasource = createDataSource();
    const props = createSavedProps(datasource.getDefaultQuery(CoreApp.PanelEditor), datasource);
    await renderEditor(props);
    expect(screen.queryAllByRole('alert')).toHaveLength(0);
    fireEvent.blur(screen.getByLabelText(/^Histogram metric/));
    expect(screen.getAllByRole('alert')).toHaveLength(1);
    expect(screen.getByRole('alert')).toHaveTextContent(/Enter the histogram metric/);
    expect(props.onRunQuery).not.toHaveBeenCalled();
  });
});
