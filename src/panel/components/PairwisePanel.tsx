import React, { useMemo } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, PanelProps } from '@grafana/data';
import { PanelDataErrorView } from '@grafana/runtime';
import { useStyles2, useTheme2 } from '@grafana/ui';
import { readAnnotations } from '../data/annotations';
import { defaultPrometheusUid } from '../data/explore';
import { panelLayout, stripLayout } from '../data/layout';
import { buildViewModel } from '../data/viewModel';
import { panelTestIds } from '../testIds';
import { PairwisePanelOptions } from '../types';
import { DecisionBanner } from './DecisionBanner';
import { DecisionTrack } from './DecisionTrack';
import { MinuteStrip } from './MinuteStrip';
import { PairedCharts } from './PairedCharts';
import { ReferenceTable } from './ReferenceTable';

type Props = PanelProps<PairwisePanelOptions>;

export function PairwisePanel({ id, data, options, fieldConfig, width, height, timeZone, replaceVariables }: Props) {
  const styles = useStyles2(getStyles);
  const theme = useTheme2();
  const unit = fieldConfig?.defaults?.unit;
  const decimals = fieldConfig?.defaults?.decimals ?? undefined;
  // The shipped dashboard names its Prometheus data source variable ("${prometheus}"): the
  // Explore links follow whatever that variable holds. Unset, or a variable this dashboard does not
  // have (Grafana leaves it as written, as in a panel copied to another dashboard): the default
  // Prometheus data source.
  const replaced = replaceVariables
    ? replaceVariables(options.prometheusDatasourceUid ?? '')
    : options.prometheusDatasourceUid;
  const configuredUid = replaced?.includes('$') ? '' : replaced;
  const prometheusDatasourceUid = useMemo(() => configuredUid || defaultPrometheusUid(), [configuredUid]);

  const viewModel = useMemo(
    () =>
      buildViewModel(data.series, {
        timeZone,
        unit,
        decimals,
        tableQuantiles: options.tableQuantiles,
        prometheusDatasourceUid,
      }),
    [data.series, timeZone, unit, decimals, options.tableQuantiles, prometheusDatasourceUid]
  );
  const annotations = useMemo(() => readAnnotations(data.annotations), [data.annotations]);

  if (viewModel.status === 'empty') {
    // A failed query is why there are no minutes: say so, not "check the selectors".
    const failed = data.errors?.find((e) => e.message)?.message;
    const message = failed ? `The Pairwise query failed: ${failed}` : viewModel.message;
    return <PanelDataErrorView panelId={id} fieldConfig={fieldConfig} data={data} message={message} />;
  }
  if (viewModel.status === 'invalid') {
    return (
      <div className={styles.message} data-testid={panelTestIds.shapeError} role="alert">
        {viewModel.message}
      </div>
    );
  }

  const layout = panelLayout(width, height, options, theme.spacing.gridSize, viewModel.track?.markerLines ?? null);
  const formatLatency = viewModel.formatLatency;
  // The track sits under its minutes when the strip is one row; otherwise it is a timeline.
  const stripColumns = layout.showStrip
    ? stripLayout(viewModel.minutes.length, width, layout.stripMaxHeight, theme.spacing.gridSize).perRow
    : 0;

  return (
    <div className={styles.panel} style={{ width, height }} data-testid={panelTestIds.panel}>
      {layout.showBanner && (
        <DecisionBanner decision={viewModel.decision} minuteCounts={viewModel.minuteCounts} compact={layout.compact} />
      )}
      {layout.showStrip && (
        <MinuteStrip
          minutes={viewModel.minutes}
          meta={viewModel.meta}
          counts={viewModel.minuteCounts}
          width={width}
          maxHeight={layout.stripMaxHeight}
          formatLatency={formatLatency}
          showLegend={layout.showLegend}
        />
      )}
      {layout.showTrack && viewModel.track && (
        <DecisionTrack
          minutes={viewModel.minutes}
          track={viewModel.track}
          meta={viewModel.meta}
          stripColumns={stripColumns >= viewModel.minutes.length ? stripColumns : 0}
          compact={layout.compact}
        />
      )}
      {layout.showCharts && (
        <PairedCharts
          minutes={viewModel.minutes}
          meta={viewModel.meta}
          firings={viewModel.track?.firings ?? []}
          annotations={annotations}
          width={width}
          height={layout.chartHeight}
          formatLatency={formatLatency}
        />
      )}
      {layout.showTable && (
        <ReferenceTable
          key={options.sortOrder}
          minutes={viewModel.minutes}
          quantiles={viewModel.tableQuantiles}
          sortOrder={options.sortOrder}
          height={layout.tableHeight}
          formatLatency={formatLatency}
          zoneLabel={viewModel.zoneLabel}
        />
      )}
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  panel: css({
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(1),
    overflow: 'hidden',
  }),
  message: css({
    padding: theme.spacing(1),
    color: theme.colors.text.primary,
  }),
});
