import { AppPlugin } from '@grafana/data';
import { AppConfig } from './components/AppConfig';
import { AppRoot } from './components/AppRoot';

export const plugin = new AppPlugin<{}>().setRootPage(AppRoot).addConfigPage({
  title: 'Configuration',
  icon: 'cog',
  body: AppConfig,
  id: 'configuration',
});
