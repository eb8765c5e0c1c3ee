import React from 'react';
import { lastValueFrom } from 'rxjs';
import { css } from '@emotion/css';
import { AppPluginMeta, GrafanaTheme2, PluginConfigPageProps } from '@grafana/data';
import { getBackendSrv, locationService } from '@grafana/runtime';
import { Button, useStyles2 } from '@grafana/ui';
import { appTestIds } from './testIds';

export interface AppConfigProps extends PluginConfigPageProps<AppPluginMeta<{}>> {}

/** The app has no settings of its own: data source settings live on the data source. */
export function AppConfig({ plugin }: AppConfigProps) {
  const styles = useStyles2(getStyles);
  const { enabled, pinned, id } = plugin.meta;

  const setEnabled = async (next: boolean) => {
    await lastValueFrom(
      getBackendSrv().fetch({
        url: `/api/plugins/${id}/settings`,
        method: 'POST',
        data: { enabled: next, pinned: next ? true : pinned, jsonData: {} },
      })
    );
    locationService.reload();
  };

  return (
    <div className={styles.config} data-testid={appTestIds.config}>
      <p>
        Pairwise keeps its settings on the Pairwise data source (Prometheus URL, authentication, timeout). Enable the
        app to make its dashboard and panel available.
      </p>
      <Button
        data-testid={appTestIds.enable}
        variant={enabled ? 'destructive' : 'primary'}
        onClick={() => setEnabled(!enabled)}
      >
        {enabled ? 'Disable' : 'Enable'}
      </Button>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  config: css({
    display: 'flex',
    flexDirection: 'column',
    gap: theme.spacing(2),
    alignItems: 'flex-start',
  }),
});
