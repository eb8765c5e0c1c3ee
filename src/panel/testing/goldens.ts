import fs from 'fs';
import path from 'path';
import { DataFrame, DataFrameJSON, dataFrameFromJSON } from '@grafana/data';

/**
 * The offline golden analyses of pkg/frames (TestGoldenFrames): an hour judged by each rule, and the same
 * hour judged as a deployment that started a minute before it (its evidence pooled from that start).
 */
export type GoldenName = 'hour' | 'hour-reference' | 'hour-deployed';

const GOLDEN_DIR = path.join(__dirname, '..', '..', '..', 'pkg', 'frames', 'testdata');

/** The golden JSON of the data source's frames (minutes, decision, pods), as the Go SDK writes them. */
export function goldenJSON(name: GoldenName): DataFrameJSON[] {
  return JSON.parse(fs.readFileSync(path.join(GOLDEN_DIR, `${name}.json`), 'utf8'));
}

/** The golden frames as the panel receives them. */
export function goldenFrames(name: GoldenName = 'hour'): DataFrame[] {
  return goldenJSON(name).map((frame) => dataFrameFromJSON(frame));
}

/** The meta.custom the data source wrote with the golden frames. */
export function goldenMeta(name: GoldenName = 'hour'): Record<string, unknown> {
  return (goldenJSON(name)[0].schema?.meta?.custom ?? {}) as Record<string, unknown>;
}
