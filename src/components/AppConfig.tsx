import React, { useState } from 'react';
import { lastValueFrom } from 'rxjs';
import { css } from '@emotion/css';
import { AppPluginMeta, GrafanaTheme2, PluginConfigPageProps } from '@grafana/data';
import { getBackendSrv, locationService } from '@grafana/runtime';
import { Alert, Button, useStyles2 } from '@grafana/ui';
import { appTestIds } from './testIds';

export interface AppConfigProps extends PluginConfigPageProps<AppPluginMeta<{}>> {}

/** What a failed request says: Grafana's message (a FetchError's data.message), else its status or error text. */
function describeError(err: unknown): string {
  const e = (err ?? {}) as { data?: { message?: unknown }; status?: unknown; statusText?: unknown; message?: unknown };
  if (typeof e.data?.message === 'string' && e.data.message) {
    return e.data.message;
  }
  if (typeof e.message === 'string' && e.message) {
    return e.message;
  }
  if (e.status !== undefined) {
    return `HTTP ${String(e.status)}${typeof e.statusText === 'string' && e.statusText ? ` ${e.statusText}` : ''}`;
  }
  return String(err);
}

/** The app has no settings of its own: data source settings live on the data source. */
export function AppConfig({ plugin }: AppConfigProps) {
  const styles = useStyles2(getStyles);
  const { enabled, pinned, id, autoEnabled } = plugin.meta;
  const [error, setError] = useState<{ title: string; message: string } | undefined>();

  const setEnabled = async (next: boolean) => {
    setError(undefined);
    try {
      await lastValueFrom(
        getBackendSrv().fetch({
          url: `/api/plugins/${id}/settings`,
          method: 'POST',
          data: { enabled: next, pinned: next ? true : pinned, jsonData: {} },
          // The failure is shown here, beside the button.
          showErrorAlert: false,
        })
      );
    } catch (err) {
      setError({ title: `Pairwise could not be ${next ? 'enabled' : 'disabled'}`, message: describeError(err) });
      return;
    }
    locationService.reload();
  };

  return (
    <div className={styles.config} data-testid={appTestIds.config}>
      <p>
        Pairwise keeps its settings on the Pairwise data source (Prometheus URL, authentication, timeout).
        {autoEnabled ? null : ' Enable the app to make its dashboard and panel available.'}
      </p>
      {error ? (
        <Alert title={error.title} severity="error" onRemove={() => setError(undefined)}>
          {error.message}
        </Alert>
      ) : null}
      {autoEnabled ? (
        // Grafana refuses to disable an auto-enabled app ("Cannot disable auto-enabled plugin").
        <p data-testid={appTestIds.alwaysOn}>Pairwise is always enabled: Grafana enables it automatically.</p>
      ) : (
        <Button
          data-testid={appTestIds.enable}
          variant={enabled ? 'destructive' : 'primary'}
          onClick={() => setEnabled(!enabled)}
        >
          {enabled ? 'Disable' : 'Enable'}
        </Button>
      )}
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
