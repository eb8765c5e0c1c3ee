import { DataSourcePlugin } from '@grafana/data';
import { DataSource } from './datasource';
import { ConfigEditor } from './components/ConfigEditor';
import { QueryEditor } from './components/QueryEditor';
import { PairwiseOptions, PairwiseQuery } from './types';

export const plugin = new DataSourcePlugin<DataSource, PairwiseQuery, PairwiseOptions>(DataSource)
  .setConfigEditor(ConfigEditor)
  .setQueryEditor(QueryEditor);
