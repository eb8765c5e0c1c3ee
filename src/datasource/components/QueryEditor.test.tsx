import React from 'react';
import { act, cleanup, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { DataSource } from '../datasource';
import { dsTestIds } from '../testIds';
import { DEFAULT_QUERY, PairwiseQuery } from '../types';
import { QueryEditor } from './QueryEditor';

function createProps(
  overrides: Partial<PairwiseQuery> = {},
  loadMetrics: () => Promise<unknown> = () => Promise.reject(new Error('metrics resource unavailable'))
) {
  const datasource = { getMetrics: jest.fn(loadMetrics) } as unknown as DataSource;
  return {
    datasource,
    query: { ...DEFAULT_QUERY, refId: 'A', ...overrides } as PairwiseQuery,
    onChange: jest.fn(),
    onRunQuery: jest.fn(),
  };
}

/** Renders and lets the metrics request settle, so state updates happen inside act(). */
async function renderEditor(props: ReturnType<typeof createProps>) {
  await act(async () => {
    render(<QueryEditor {...props} />);
  });
}

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
    expect(screen.getByText(/rollback threshold must be above/)).toBeInTheDocument();
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
});
