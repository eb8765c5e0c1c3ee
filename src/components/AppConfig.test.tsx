import fs from 'fs';
import path from 'path';
import React from 'react';
import { throwError, of } from 'rxjs';
import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { AppPlugin, AppPluginMeta, PluginType } from '@grafana/data';
import { getBackendSrv, locationService } from '@grafana/runtime';
import { AppConfig } from './AppConfig';
import { appTestIds } from './testIds';

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: jest.fn(),
  locationService: { reload: jest.fn() },
}));

const fetch = jest.fn();

function renderConfig(enabled: boolean, autoEnabled = false) {
  const plugin = new AppPlugin<{}>();
  plugin.meta = {
    id: 'pairwise-canary-app',
    name: 'Pairwise',
    type: PluginType.app,
    enabled,
    pinned: enabled,
    autoEnabled,
    jsonData: {},
  } as unknown as AppPluginMeta<{}>;
  render(<AppConfig plugin={plugin} query={{}} />);
}

describe('AppConfig', () => {
  beforeEach(() => {
    fetch.mockReset();
    jest.mocked(getBackendSrv).mockReturnValue({ fetch } as unknown as ReturnType<typeof getBackendSrv>);
    jest.mocked(locationService.reload).mockReset();
  });

  it('enables the app and reloads', async () => {
    fetch.mockReturnValue(of({ data: {}, status: 200 }));
    renderConfig(false);
    fireEvent.click(screen.getByTestId(appTestIds.enable));
    await waitFor(() => expect(locationService.reload).toHaveBeenCalled());
    expect(fetch).toHaveBeenCalledWith(
      expect.objectContaining({ url: '/api/plugins/pairwise-canary-app/settings', method: 'POST' })
    );
    expect(fetch.mock.calls[0][0].data).toMatchObject({ enabled: true, pinned: true });
    expect(screen.queryByRole('alert')).not.toBeInTheDocument();
  });

  it('offers no Disable button for the auto-enabled app, which Grafana refuses to disable', () => {
    const app = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'plugin.json'), 'utf8'));
    expect(app.autoEnabled).toBe(true);
    renderConfig(true, app.autoEnabled);
    expect(screen.queryByTestId(appTestIds.enable)).not.toBeInTheDocument();
    expect(screen.queryByRole('button', { name: /Disable/ })).not.toBeInTheDocument();
    expect(screen.getByTestId(appTestIds.alwaysOn)).toHaveTextContent(/always enabled/);
    expect(fetch).not.toHaveBeenCalled();
  });

  it('says why when the settings cannot be saved, and does not reload', async () => {
    fetch.mockReturnValue(
      throwError(() => ({ status: 403, statusText: 'Forbidden', data: { message: 'Permission denied' } }))
    );
    renderConfig(true);
    fireEvent.click(screen.getByTestId(appTestIds.enable));
    const alert = await screen.findByRole('alert');
    expect(alert).toHaveTextContent('Pairwise could not be disabled');
    expect(alert).toHaveTextContent('Permission denied');
    expect(locationService.reload).not.toHaveBeenCalled();
  });
});
