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
import { validateScrapeInterval } from '../validation';

type Options = DataSourceSettings<PairwiseOptions, PairwiseSecureJsonData>;
type Props = DataSourcePluginOptionsEditorProps<PairwiseOptions, PairwiseSecureJsonData>;

/** The backend's timeout when none is set, and the longest it accepts (pkg/plugin DefaultTimeout, MaxTimeout). */
export const DEFAULT_TIMEOUT_SECONDS = 30;
export const MAX_TIMEOUT_SECONDS = 600;

/** Checks a timeout as pkg/plugin reads it: seconds above 0, at most MAX_TIMEOUT_SECONDS. */
export function validateTimeout(seconds: number): string | undefined {
  return Number.isFinite(seconds) && seconds > 0 && seconds <= MAX_TIMEOUT_SECONDS
    ? undefined
    : `The timeout is a number of seconds above 0 and at most ${MAX_TIMEOUT_SECONDS}; leave it empty for ${DEFAULT_TIMEOUT_SECONDS}.`;
}
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

  /** Stores a number setting as typed; an empty field removes it, so the backend's default applies. */
  const setNumber = (key: 'timeout' | 'scrapeIntervalSeconds', text: string) => {
    const rest = Object.fromEntries(Object.entries(options.jsonData ?? {}).filter(([k]) => k !== key));
    onOptionsChange({
      ...options,
      jsonData: (text.trim() === '' ? rest : { ...rest, [key]: Number(text) }) as PairwiseOptions,
    });
  };
  const { timeout, scrapeIntervalSeconds } = options.jsonData ?? {};
  const timeoutError = timeout === undefined ? undefined : validateTimeout(Number(timeout));
  const scrapeError =
    scrapeIntervalSeconds === undefined ? undefined : validateScrapeInterval(Number(scrapeIntervalSeconds));

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
        <Field
          label="Timeout"
          description={`Seconds a query, retries included, may wait for Prometheus (at most ${MAX_TIMEOUT_SECONDS}; empty: ${DEFAULT_TIMEOUT_SECONDS})`}
          invalid={Boolean(timeoutError)}
          error={timeoutError}
        >
          <Input
            id="pairwise-config-timeout"
            data-testid={dsTestIds.configEditor.timeout}
            type="number"
            width={16}
            max={MAX_TIMEOUT_SECONDS}
            placeholder={String(DEFAULT_TIMEOUT_SECONDS)}
            value={timeout ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setNumber('timeout', e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Scrape interval"
          description="Seconds between Prometheus's scrapes of the fleets (10, 15, 20, 30 or 60): each minute is read whole. Queries may set their own; when both fleets' samples show another interval, their minutes are read at it and the query warns."
          invalid={Boolean(scrapeError)}
          error={scrapeError}
        >
          <Input
            id="pairwise-config-scrape-interval"
            data-testid={dsTestIds.configEditor.scrapeInterval}
            type="number"
            width={16}
            min={1}
            max={60}
            placeholder={String(CONTRACT.defaults.scrapeIntervalSeconds)}
            value={scrapeIntervalSeconds ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setNumber('scrapeIntervalSeconds', e.currentTarget.value)}
          />
        </Field>
      </ConfigSection>
    </>
  );
}
