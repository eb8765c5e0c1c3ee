import React, { ChangeEvent } from 'react';
import { DataSourcePluginOptionsEditorProps } from '@grafana/data';
import { Field, FieldSet, Input, SecretInput, SecretTextArea, Switch } from '@grafana/ui';
import { dsTestIds } from '../testIds';
import { PairwiseOptions, PairwiseSecureJsonData } from '../types';

type Props = DataSourcePluginOptionsEditorProps<PairwiseOptions, PairwiseSecureJsonData>;

const DEFAULT_TIMEOUT_SECONDS = 30;

/** Prometheus connection settings. Secrets go to secureJsonData only and are never read back. */
export function ConfigEditor({ options, onOptionsChange }: Props) {
  const { jsonData, secureJsonFields } = options;
  const secureJsonData = (options.secureJsonData ?? {}) as PairwiseSecureJsonData;

  const setJson = (patch: Partial<PairwiseOptions>) =>
    onOptionsChange({ ...options, jsonData: { ...jsonData, ...patch } });
  const setSecret = (key: keyof PairwiseSecureJsonData, value: string) =>
    onOptionsChange({ ...options, secureJsonData: { ...secureJsonData, [key]: value } });
  const resetSecret = (key: keyof PairwiseSecureJsonData) =>
    onOptionsChange({
      ...options,
      secureJsonFields: { ...secureJsonFields, [key]: false },
      secureJsonData: { ...secureJsonData, [key]: '' },
    });

  return (
    <>
      <FieldSet label="Prometheus">
        <Field
          label="Prometheus URL"
          description="HTTP API root of Prometheus, Mimir or Thanos, e.g. http://prometheus:9090"
          required
        >
          <Input
            data-testid={dsTestIds.configEditor.url}
            width={60}
            value={jsonData.prometheusUrl ?? ''}
            placeholder="http://prometheus:9090"
            onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ prometheusUrl: e.currentTarget.value.trim() })}
          />
        </Field>
        <Field label="Timeout (seconds)" description="Per Prometheus request">
          <Input
            data-testid={dsTestIds.configEditor.timeout}
            type="number"
            width={16}
            min={1}
            value={jsonData.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS}
            onChange={(e: ChangeEvent<HTMLInputElement>) =>
              setJson({ timeoutSeconds: Number(e.currentTarget.value) || DEFAULT_TIMEOUT_SECONDS })
            }
          />
        </Field>
      </FieldSet>
      <FieldSet label="Authentication (optional)">
        <Field label="Basic auth user">
          <Input
            data-testid={dsTestIds.configEditor.basicAuthUser}
            width={40}
            value={jsonData.basicAuthUser ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ basicAuthUser: e.currentTarget.value })}
          />
        </Field>
        <Field label="Basic auth password">
          <SecretInput
            data-testid={dsTestIds.configEditor.basicAuthPassword}
            width={40}
            isConfigured={Boolean(secureJsonFields?.basicAuthPassword)}
            value={secureJsonData.basicAuthPassword ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setSecret('basicAuthPassword', e.currentTarget.value)}
            onReset={() => resetSecret('basicAuthPassword')}
          />
        </Field>
        <Field label="Bearer token" description="Sent as Authorization: Bearer; use either this or basic auth">
          <SecretInput
            data-testid={dsTestIds.configEditor.bearerToken}
            width={40}
            isConfigured={Boolean(secureJsonFields?.bearerToken)}
            value={secureJsonData.bearerToken ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setSecret('bearerToken', e.currentTarget.value)}
            onReset={() => resetSecret('bearerToken')}
          />
        </Field>
      </FieldSet>
      <FieldSet label="TLS and headers (optional)">
        <Field label="Skip TLS verification" description="Only for test servers: the certificate is not checked">
          <Switch
            data-testid={dsTestIds.configEditor.tlsSkipVerify}
            value={Boolean(jsonData.tlsSkipVerify)}
            onChange={(e: React.FormEvent<HTMLInputElement>) => setJson({ tlsSkipVerify: e.currentTarget.checked })}
          />
        </Field>
        <Field label="CA certificate" description="PEM of the CA that signed Prometheus's certificate">
          <SecretTextArea
            data-testid={dsTestIds.configEditor.tlsCACert}
            cols={60}
            rows={4}
            isConfigured={Boolean(secureJsonFields?.tlsCACert)}
            value={secureJsonData.tlsCACert ?? ''}
            onChange={(e: ChangeEvent<HTMLTextAreaElement>) => {
              const value = e.currentTarget.value;
              onOptionsChange({
                ...options,
                jsonData: { ...jsonData, tlsAuthWithCACert: value.trim() !== '' },
                secureJsonData: { ...secureJsonData, tlsCACert: value },
              });
            }}
            onReset={() => resetSecret('tlsCACert')}
          />
        </Field>
        <Field label="Header name" description="A header sent with every request, e.g. X-Scope-OrgID for Mimir">
          <Input
            data-testid={dsTestIds.configEditor.headerName}
            width={40}
            value={jsonData.httpHeaderName1 ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setJson({ httpHeaderName1: e.currentTarget.value.trim() })}
          />
        </Field>
        <Field label="Header value" description="Stored encrypted, like a password">
          <SecretInput
            data-testid={dsTestIds.configEditor.headerValue}
            width={40}
            isConfigured={Boolean(secureJsonFields?.httpHeaderValue1)}
            value={secureJsonData.httpHeaderValue1 ?? ''}
            onChange={(e: ChangeEvent<HTMLInputElement>) => setSecret('httpHeaderValue1', e.currentTarget.value)}
            onReset={() => resetSecret('httpHeaderValue1')}
          />
        </Field>
      </FieldSet>
    </>
  );
}
