import { DataFrame } from '@grafana/data';

/** One annotation of the panel's data (an alert's state change, a deploy): a moment, or a region. */
export interface AnnotationMark {
  /** Epoch milliseconds. */
  time: number;
  /** The region's end, epoch milliseconds; undefined for a moment. */
  timeEnd?: number;
  /** Its title and text, without markup. */
  text: string;
  /** The colour Grafana gives it (a colour name or CSS colour); '' for the theme's. */
  color: string;
}

/** Annotation text may be HTML (alert state annotations are): the words only. */
const plain = (value: unknown) =>
  typeof value === 'string'
    ? value
        .replace(/<[^>]*>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim()
    : '';

/**
 * Reads the panel's data.annotations: frames with a time field and optionally timeEnd, title, text and
 * color, as Grafana hands annotations to panels. Rows without a time are left out; sorted by time.
 */
export function readAnnotations(frames: DataFrame[] | undefined): AnnotationMark[] {
  const marks: AnnotationMark[] = [];
  for (const frame of frames ?? []) {
    const values = (name: string) => frame.fields.find((f) => f.name === name)?.values;
    const [time, timeEnd, title, text, color] = ['time', 'timeEnd', 'title', 'text', 'color'].map(values);
    for (let row = 0; row < (time?.length ?? 0); row++) {
      const start = Number(time?.[row] ?? NaN);
      if (!Number.isFinite(start)) {
        continue;
      }
      const end = Number(timeEnd?.[row] ?? NaN);
      const words = [...new Set([plain(title?.[row]), plain(text?.[row])].filter(Boolean))].join(': ');
      marks.push({
        time: start,
        timeEnd: Number.isFinite(end) && end > start ? end : undefined,
        text: words || 'Annotation',
        color: typeof color?.[row] === 'string' ? color[row] : '',
      });
    }
  }
  return marks.sort((a, b) => a.time - b.time);
}
