import React from 'react';
import { css } from '@emotion/css';
import { AppRootProps, GrafanaTheme2 } from '@grafana/data';
import { TextLink, useStyles2 } from '@grafana/ui';
import { appTestIds } from './testIds';

/** The app's landing page: what Pairwise is and where its parts live. */
export function AppRoot(_props: AppRootProps) {
  const styles = useStyles2(getStyles);
  return (
    <div className={styles.page} data-testid={appTestIds.root}>
      <h1>Pairwise</h1>
      <p>
        Pairwise compares a canary fleet with a baseline fleet minute by minute on the wall clock, from the fleets&apos;
        merged Prometheus histograms, and decides PROMOTE, HOLD or ROLLBACK for the window.
      </p>
      <ol>
        <li>Add a Pairwise data source pointing at your Prometheus (or Mimir/Thanos) HTTP API.</li>
        <li>
          Import the bundled &quot;Pairwise canary&quot; dashboard (Administration &gt; Plugins and data &gt; Plugins
          &gt; Pairwise, tab Dashboards), or add the Pairwise canary panel to yours.
        </li>
        <li>Set the metric and the baseline and canary selectors in the query.</li>
      </ol>
      <TextLink href="/connections/datasources/new" inline={false}>
        Add a data source
      </TextLink>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  page: css({
    padding: theme.spacing(2),
    maxWidth: theme.breakpoints.values.md,
  }),
});
