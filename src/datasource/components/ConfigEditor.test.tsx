import React from 'react';
import { fireEvent, render, screen } from '@testing-library/react';
import { DataSourceSettings } from '@grafana/data';
import { dsTestIds } from '../testIds';
import { PairwiseOptions, PairwiseSecureJsonData } from '../types';
import { ConfigEditor, migrateLegacySettings } from './ConfigEditor';

type Options = DataSourceSettings<PairwiseOptions, PairwiseSecureJsonData>;

function createOptions(overrides: Partial<Options> = {}): Options {
  return {
    id: 1,
    uid: 'pw',
    orgId: 1,
    name: 'Pairwise',
    type: 'pairwise-canary-datasource',
    typeName: 'Pairwise',
    typeLogoUrl: '',
    access: 'proxy',
    url: 'http://prometheus:9090',
    user: '',
    basicAuth: false,
    basicAuthUser: '',
    isDefault: false,
    jsonData: {},
    secureJsonFields: {},
    readOnly: false,
    withCredentials: false,
    ...overrides,
  } as Options;
}

const last = (fn: jest.Mock): Options => fn.mock.calls.at(-1)[0];

// jsdom has no IntersectionObserver; Grafana's select menu uses one for its scroll shadows.
beforeAll(() => {
  Object.defineProperty(window, 'IntersectionObserver', {
    writable: true,
    value: class {
      observe() {}
      unobserve() {}
      disconnect() {}
      takeRecords() {
        return [];
      }
    },
  });
});

describe('ConfigEditor', () => {
  it('keeps the URL in the standard url field, edited through Connection', () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={createOptions({ url: '' })} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByPlaceholderText('http://prometheus:9090'), {
      target: { value: 'http://mimir/prometheus' },
    });
    expect(last(onOptionsChange).url).toBe('http://mimir/prometheus');
    expect(last(onOptionsChange).jsonData).not.toHaveProperty('prometheusUrl');
  });

  it('keeps the timeout in jsonData.timeout', () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={createOptions()} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.timeout), { target: { value: '45' } });
    expect(last(onOptionsChange).jsonData.timeout).toBe(45);
  });

  it('keeps the scrape interval in jsonData.scrapeIntervalSeconds', () => {
    const onOptionsChange = jest.fn();
    render(<ConfigEditor options={createOptions()} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.scrapeInterval), { target: { value: '30' } });
    expect(last(onOptionsChange).jsonData.scrapeIntervalSeconds).toBe(30);
  });

  it('unsets the scrape interval when it is cleared', () => {
    const onOptionsChange = jest.fn();
    const options = createOptions();
    render(
      <ConfigEditor
        options={{ ...options, jsonData: { ...options.jsonData, scrapeIntervalSeconds: 30 } }}
        onOptionsChange={onOptionsChange}
      />
    );
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.scrapeInterval), { target: { value: '' } });
    expect(last(onOptionsChange).jsonData.scrapeIntervalSeconds).toBeUndefined();
  });

  it('stores the timeout as typed, empty for the default, with an inline error out of range', () => {
    const onOptionsChange = jest.fn();
    const options = createOptions({ jsonData: { timeout: 45 } });
    const { rerender } = render(<ConfigEditor options={options} onOptionsChange={onOptionsChange} />);
    const timeout = screen.getByTestId(dsTestIds.configEditor.timeout);
    // Cleared: unset, the backend's 30 s, shown as the placeholder (not written back as 30).
    fireEvent.change(timeout, { target: { value: '' } });
    const cleared = last(onOptionsChange);
    expect(cleared.jsonData).not.toHaveProperty('timeout');
    rerender(<ConfigEditor options={cleared} onOptionsChange={onOptionsChange} />);
    expect(timeout).toHaveValue(null);
    expect(timeout).toHaveAttribute('placeholder', '30');
    expect(screen.queryAllByRole('alert')).toHaveLength(0);

    for (const [typed, stored, error] of [
      ['20', 20, false],
      ['0', 0, true],
      ['9999', 9999, true],
      ['600', 600, false],
      ['0.5', 0.5, false],
    ] as const) {
      fireEvent.change(timeout, { target: { value: typed } });
      const next = last(onOptionsChange);
      expect(next.jsonData.timeout).toBe(stored);
      rerender(<ConfigEditor options={next} onOptionsChange={onOptionsChange} />);
      expect(timeout).toHaveValue(stored);
      if (error) {
        expect(screen.getByRole('alert')).toHaveTextContent(/above 0 and at most 600/);
      } else {
        expect(screen.queryAllByRole('alert')).toHaveLength(0);
      }
    }
  });

  it('says inline when the backend refuses the scrape interval', () => {
    const onOptionsChange = jest.fn();
    const { rerender } = render(<ConfigEditor options={createOptions()} onOptionsChange={onOptionsChange} />);
    const scrape = screen.getByTestId(dsTestIds.configEditor.scrapeInterval);
    for (const [typed, error] of [
      ['25', true],
      ['0', true],
      ['120', true],
      ['7.5', true],
      ['30', false],
      ['12', false],
    ] as const) {
      fireEvent.change(scrape, { target: { value: typed } });
      const next = last(onOptionsChange);
      expect(next.jsonData.scrapeIntervalSeconds).toBe(Number(typed));
      rerender(<ConfigEditor options={next} onOptionsChange={onOptionsChange} />);
      if (error) {
        expect(screen.getByRole('alert')).toHaveTextContent(/divides a minute/);
      } else {
        expect(screen.queryAllByRole('alert')).toHaveLength(0);
      }
    }
  });

  it('turns on Grafana basic auth with the user at the top level and the password secret', () => {
    const onOptionsChange = jest.fn();
    render(
      <ConfigEditor
        options={createOptions({ basicAuth: true, basicAuthUser: 'sre' })}
        onOptionsChange={onOptionsChange}
      />
    );
    expect(screen.getByDisplayValue('sre')).toBeInTheDocument();
    const password = screen.getByPlaceholderText(/password/i);
    fireEvent.change(password, { target: { value: 's3cret' } });
    const next = last(onOptionsChange);
    expect(next.secureJsonData).toEqual({ basicAuthPassword: 's3cret' });
    expect(JSON.stringify(next.jsonData)).not.toContain('s3cret');
  });

  it('shows a configured bearer token as the auth method, and sends a new one only in secureJsonData', () => {
    const onOptionsChange = jest.fn();
    render(
      <ConfigEditor
        options={createOptions({ secureJsonFields: { bearerToken: true } })}
        onOptionsChange={onOptionsChange}
      />
    );
    // The bearer method is selected: its field is shown, configured.
    expect(screen.getByTestId(dsTestIds.configEditor.bearerToken)).toBeInTheDocument();
    fireEvent.click(screen.getByRole('button', { name: /reset/i }));
    const reset = last(onOptionsChange);
    expect(reset.secureJsonFields.bearerToken).toBe(false);
    render(<ConfigEditor options={reset} onOptionsChange={onOptionsChange} />);
    fireEvent.change(screen.getByTestId(dsTestIds.configEditor.bearerToken), { target: { value: 'tok' } });
    const next = last(onOptionsChange);
    expect(next.secureJsonData).toMatchObject({ bearerToken: 'tok' });
    expect(JSON.stringify(next.jsonData)).not.toContain('tok');
  });

  it('drops a configured bearer token when another method is chosen, so it is never sent beside basic auth', () => {
    const onOptionsChange = jest.fn();
    render(
      <ConfigEditor
        options={createOptions({ secureJsonFields: { bearerToken: true } })}
        onOptionsChange={onOptionsChange}
      />
    );
    const select = document.getElementById('auth-method-select') as HTMLElement;
    fireEvent.keyDown(select, { key: 'ArrowDown' });
    fireEvent.click(screen.getByText('Basic authentication'));
    const next = last(onOptionsChange);
    expect(next.basicAuth).toBe(true);
    expect(next.secureJsonFields.bearerToken).toBe(false);
    expect(next.secureJsonData).toMatchObject({ bearerToken: '' });
  });

  it('moves the first version settings to the standard fields when the page opens', () => {
    const onOptionsChange = jest.fn();
    const old = createOptions({
      url: '',
      jsonData: {
        prometheusUrl: ' http://prometheus:9090 ',
        timeoutSeconds: 45,
        basicAuthUser: 'sre',
        httpHeaderName1: 'X-Scope-OrgID',
      },
      secureJsonFields: { basicAuthPassword: true },
    });
    render(<ConfigEditor options={old} onOptionsChange={onOptionsChange} />);
    const next = last(onOptionsChange);
    expect(next.url).toBe('http://prometheus:9090');
    expect(next.basicAuth).toBe(true);
    expect(next.basicAuthUser).toBe('sre');
    expect(next.jsonData).toEqual({ timeout: 45, httpHeaderName1: 'X-Scope-OrgID' });
    expect(next.secureJsonFields).toEqual({ basicAuthPassword: true });
  });

  it('leaves standard settings alone', () => {
    expect(migrateLegacySettings(createOptions({ jsonData: { timeout: 10 } }))).toBeUndefined();
    const both = migrateLegacySettings(
      createOptions({
        url: 'http://new:9090',
        jsonData: { prometheusUrl: 'http://old:9090', timeout: 10, timeoutSeconds: 99 },
      })
    );
    expect(both?.url).toBe('http://new:9090');
    expect(both?.jsonData).toEqual({ timeout: 10 });
  });
});
