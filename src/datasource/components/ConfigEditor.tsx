import React, { ChangeEvent, useEffect, useState } from 'react';
import { DataSourcePluginOptionsEditorProps, DataSourceSettings } from '@grafana/data';
import {
  Auth,
  AuthMethod,
  ConfigSection,
  ConnectionSettings,
  convertLegacyAuthProps,
  DataSourceDescription,
} from '@grafana/plugin-ui';
import { Field, Input, SecretInput } from '@grafana/ui';
import { CONTRACT } from '../../contract';
import { dsTestIds } from '../testIds';
import { PairwiseOptions, PairwiseSecureJsonData } from '../types';

type Options = DataSourceSettings<PairwiseOptions, PairwiseSecureJsonData>;
type Props = DataSourcePluginOptionsEditorProps<PairwiseOptions, PairwiseSecureJsonData>;

export const DEFAULT_TIMEOUT_SECONDS = 30;
/** The Auth component's custom method for a bearer token (secureJsonData.bearerToken). */
export const BEARER_METHOD = 'custom-bearer' as const;

/**
 * Moves the settings of Pairwise's first settings page (jsonData.prometheusUrl, timeoutSeconds,
 * basicAuthUser) to Grafana's standard ones (url, jsonData.timeout, basicAuth and basicAuthUser).
 * The basic auth password already lives in secureJsonData.basicAuthPassword, the standard key.
 * Returns undefined when there is nothing to move.
 */
export function migrateLegacySettings(options: Options): Options | undefined {
  const { prometheusUrl, timeoutSeconds, basicAuthUser, ...jsonData } = options.jsonData ?? {};
  if (prometheusUrl === undefined && timeoutSeconds === undefined && basicAuthUser === undefined) {
    return undefined;
  }
  const next: Options = { ...options, jsonData: jsonData as PairwiseOptions };
  if (prometheusUrl && !options.url) {
    next.url = prometheusUrl.trim();
  }
  if (timeoutSeconds && next.jsonData.timeout === undefined) {
    next.jsonData = { ...next.jsonData, timeout: timeoutSeconds };
  }
  if (basicAuthUser && !options.basicAuthUser) {
    next.basicAuth = true;
    next.basicAuthUser = basicAuthUser;
  }
  return next;
}

/**
 * The Pairwise data source's settings, as Grafana users know them from the Prometheus data source:
 * Connection (the URL), Authentication (no auth, basic auth or a bearer token; TLS; custom headers such as
 * X-Scope-OrgID for Mimir) and a timeout. Secrets go to secureJsonData only and are never read back.
 */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const secure = (options.secureJsonData ?? {}) as PairwiseSecureJsonData;
  const bearerConfigured = Boolean(options.secureJsonFields?.bearerToken) || Boolean(secure.bearerToken);
  const [bearerChosen, setBearerChosen] = useState(false);

  useEffect(() => {
    const migrated = migrateLegacySettings(options);
    if (migrated) {
      onOptionsChange(migrated);
    }
    // Once, when the page opens with settings of the first version.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  const authProps = convertLegacyAuthProps({ config: options, onChange: onOptionsChange });
  const bearerSelected = !options.basicAuth && (bearerChosen || bearerConfigured);

  const selectMethod = (method: AuthMethod | `custom-${string}`) => {
    if (method === BEARER_METHOD) {
      setBearerChosen(true);
      onOptionsChange({
        ...options,
        basicAuth: false,
        withCredentials: false,
        jsonData: { ...options.jsonData, oauthPassThru: false },
      });
      return;
    }
    setBearerChosen(false);
    // Leaving the bearer token behind would send it whenever basic auth is off: drop it.
    const next: Options = bearerConfigured
      ? {
          ...options,
          secureJsonFields: { ...options.secureJsonFields, bearerToken: false },
          secureJsonData: { ...secure, bearerToken: '' },
        }
      : options;
    convertLegacyAuthProps({ config: next, onChange: onOptionsChange }).onAuthMethodSelect(method);
  };

  const bearer = (
    <Field label="Bearer token" description="Sent as Authorization: Bearer <token>">
      <SecretInput
        data-testid={dsTestIds.configEditor.bearerToken}
        width={40}
        isConfigured={Boolean(options.secureJsonFields?.bearerToken)}
        value={secure.bearerToken ?? ''}
        onChange={(e: ChangeEvent<HTMLInputElement>) =>
          onOptionsChange({ ...options, secureJsonData: { ...secure, bearerToken: e.currentTarget.value } })
        }
        onReset={() =>
          onOptionsChange({
            ...options,
            secureJsonFields: { ...options.secureJsonFields, bearerToken: false },
            secureJsonData: { ...secure, bearerToken: '' },
          })
        }
      />
    </Field>
  );

  return (
    <>
      <DataSourceDescription
        dataSourceName="Pairwise"
        docsLink="https://github.com/pairwise-canary/pairwise#in-grafana"
        hasRequiredFields
      />
      <ConnectionSettings
        config={options}
        onChange={onOptionsChange}
        urlPlaceholder="http://prometheus:9090"
        urlTooltip="The Prometheus HTTP API the analysis queries: Prometheus, Mimir (with its /prometheus prefix) or a Thanos querier"
      />
      <Auth
        {...authProps}
        visibleMethods={[AuthMethod.NoAuth, AuthMethod.BasicAuth, BEARER_METHOD]}
        customMethods={[
          {
            id: BEARER_METHOD,
            label: 'Bearer token',
            description:
              'A token in the Authorization header, as an authenticating proxy or a hosted Prometheus wants it',
            component: bearer,
          },
        ]}
        selectedMethod={bearerSelected ? BEARER_METHOD : authProps.selectedMethod}
        onAuthMethodSelect={selectMethod}
      />
      <ConfigSection title="Additional settings" isCollapsible={false}>
        <Field label="Timeout" description="Seconds a query, retries included, may wait for Prometheus (at most 600)">
          <Input
            data-testid={dsTestIds.configEditor.timeout}
            type="number"
            width={16}
            min={1}
            max={600}
            value={options.jsonData.timeout ?? DEFAULT_TIMEOUT_SECONDS}
            onChange={(e: ChangeEvent<HTMLInputElement>) =>
              onOptionsChange({
                ...options,
                jsonData: { ...options.jsonData, timeout: Number(e.currentTarget.value) || DEFAULT_TIMEOUT_SECONDS },
              })
            }
          />
        </Field>
        <Field
          label="Scrape interval"
          description="Seconds between Prometheus's scrapes of the fleets (10, 15, 20, 30 or 60): each minute is read whole. Queries may set their own; when both fleets' samples show another interval, their minutes are read at it and the query warns."
        >
          <Input
            data-testid={dsTestIds.configEditor.scrapeInterval}
            type="number"
            width={16}
            min={1}
            max={60}
            placeholder={String(CONTRACT.defaults.scrapeIntervalSeconds)}
            value={options.jsonData.scrapeIntervalSeconds ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) =>
              onOptionsChange({
                ...options,
                jsonData: { ...options.jsonData, scrapeIntervalSeconds: Number(e.currentTarget.value) || undefined },
              })
            }
          />
        </Field>
      </ConfigSection>
    </>
  );
}
