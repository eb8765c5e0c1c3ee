import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import { DataSourceSettings } from '@grafana/data';
import { dsTestIds } from '../testIds';
import { PairwiseOptions, PairwiseSecureJsonData } from '../types';
import { ConfigEditor } from './ConfigEditor';

function createOptions(overrides: Partial<DataSourceSettings<PairwiseOptions, PairwiseSecureJsonData>> = {}) {
  return {
    id: 1,
    uid: 'pw',
    name: 'Pairwise',
    type: 'pairwise-canary-datasource',
    jsonData: { prometheusUrl: 'http://prometheus:9090' },
    secureJsonFields: {},
    ...overrides,
  } as unknown as DataSourceSettings<PairwiseOptions, PairwiseSecureJsonData>;
}

describe('ConfigEditor', () => {
  it('keeps the URL and timeout in jsonData', () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={createOptions()} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.url), {
      target: { value: ' http://mimir/prometheus ' },
    });
    expect(onOptionsChange).toHaveBeenLastCalledWith(
      expect.objectContaining({ jsonData: expect.objectContaining({ prometheusUrl: 'http://mimir/prometheus' }) })
    );
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.timeout), { target: { value: '45' } });
    expect(onOptionsChange.mock.calls.at(-1)[0].jsonData.timeoutSeconds).toBe(45);
  });

  it('sends secrets only in secureJsonData', () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={createOptions()} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.bearerToken), { target: { value: 's3cret' } });
    const next = onOptionsChange.mock.calls.at(-1)[0];
    expect(next.secureJsonData).toEqual({ bearerToken: 's3cret' });
    expect(JSON.stringify(next.jsonData)).not.toContain('s3cret');
  });

  it('keeps the header value and CA certificate secret, their switches in jsonData', () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={createOptions()} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.headerName), { target: { value: 'X-Scope-OrgID' } });
    expect(onOptionsChange.mock.calls.at(-1)[0].jsonData.httpHeaderName1).toBe('X-Scope-OrgID');
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.headerValue), { target: { value: 'tenant-42' } });
    let next = onOptionsChange.mock.calls.at(-1)[0];
    expect(next.secureJsonData).toEqual({ httpHeaderValue1: 'tenant-42' });
    expect(JSON.stringify(next.jsonData)).not.toContain('tenant-42');
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.tlsCACert), {
      target: { value: '-----BEGIN CERTIFICATE-----' },
    });
    next = onOptionsChange.mock.calls.at(-1)[0];
    expect(next.jsonData.tlsAuthWithCACert).toBe(true);
    expect(next.secureJsonData.tlsCACert).toBe('-----BEGIN CERTIFICATE-----');
    expect(JSON.stringify(next.jsonData)).not.toContain('BEGIN CERTIFICATE');
  });

  it('shows configured secrets without their value and can reset them', () => {
    const onOptionsChange = jest.fn();
    render(
      <ConfigEditor
        options={createOptions({ secureJsonFields: { basicAuthPassword: true } })}
        onOptionsChange={onOptionsChange}
      />
    );
    fireEvent.click(screen.getAllByRole('button', { name: /reset/i })[0]);
    expect(onOptionsChange.mock.calls.at(-1)[0].secureJsonFields.basicAuthPassword).toBe(false);
  });
});
