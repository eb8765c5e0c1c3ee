/**
 * Writes frames (DataFrameJSON, the format the Go backend returns) for the harness:
 * sample-frames.json, the golden hour of pkg/frames (frames the backend wrote from a fixed analysis,
 * Explore queries and flag texts included), and sample-frames-day.json (1,440 minutes of sample data).
 * Sample data only: the harness derives its expectations from whatever frames file it is given.
 */
import fs from 'fs';
import path from 'path';
import { DataFrame, DataFrameJSON, dataFrameToJSON } from '@grafana/data';
import { sampleWindow } from '../../src/panel/testing/sampleFrames';

/** dataFrameToJSON drops ±Inf (JSON has none); encode them as entities, as the Go SDK does. */
function toJSONWithEntities(frame: DataFrame): DataFrameJSON {
  const json = dataFrameToJSON(frame);
  const entities = frame.fields.map((field) => {
    const inf: number[] = [];
    const negInf: number[] = [];
    field.values.forEach((v: unknown, i: number) => {
      if (v === Infinity) {
        inf.push(i);
      } else if (v === -Infinity) {
        negInf.push(i);
      }
    });
    return inf.length || negInf.length
      ? { ...(inf.length ? { Inf: inf } : {}), ...(negInf.length ? { NegInf: negInf } : {}) }
      : null;
  });
  if (json.data && entities.some(Boolean)) {
    json.data.entities = entities;
  }
  return json;
}

const outDir = process.argv[2] ?? path.join(process.cwd(), 'tests', 'harness', 'build');
fs.mkdirSync(outDir, { recursive: true });
const start = Date.UTC(2026, 10, 21, 13, 0);

fs.copyFileSync(
  path.join(process.cwd(), 'pkg', 'frames', 'testdata', 'hour.json'),
  path.join(outDir, 'sample-frames.json')
);
console.log(`wrote ${path.join(outDir, 'sample-frames.json')} (pkg/frames/testdata/hour.json)`);

for (const [file, minutes, seed] of [['sample-frames-day.json', 1440, 11]] as const) {
  const frames = sampleWindow(start, minutes, seed).map(toJSONWithEntities);
  fs.writeFileSync(path.join(outDir, file), JSON.stringify(frames, null, 1));
  console.log(`wrote ${path.join(outDir, file)}`);
}
