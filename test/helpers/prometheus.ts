import parsePrometheusTextFormat, { type PrometheusFamily, type PrometheusSample } from "parse-prometheus-text-format";

/**
 * A `/metrics` body read by a real Prometheus text parser, with look-ups by series and labels.
 *
 * The parser folds a histogram's samples into one label-less set, dropping labelled `_sum` and
 * `_count` lines (yunyu/parse-prometheus-text-format#13, open): histograms are therefore read from
 * a second parse of the same text without their `# TYPE … histogram` lines, where each `_bucket`,
 * `_sum` and `_count` line is a plain sample that keeps its labels.
 */
export class Scrape {
  readonly families: PrometheusFamily[];
  readonly #plain: PrometheusFamily[];

  constructor(readonly text: string) {
    this.families = parsePrometheusTextFormat(text);
    this.#plain = parsePrometheusTextFormat(
      text
        .split("\n")
        .filter((line) => !/^# TYPE \S+ histogram$/.test(line))
        .join("\n"),
    );
  }

  family(name: string): PrometheusFamily | undefined {
    return this.families.find((family) => family.name === name);
  }

  /** The samples of `name` whose labels include every one of `labels`. */
  samples(name: string, labels: Record<string, string> = {}): PrometheusSample[] {
    return matching(this.family(name)?.metrics ?? [], labels);
  }

  /** The sum of the matching samples' values (0 when none matches): a counter or gauge. */
  value(name: string, labels: Record<string, string> = {}): number {
    return this.samples(name, labels).reduce((total, sample) => total + Number(sample.value), 0);
  }

  /** Every sample line, histograms' included, with its series name and labels. */
  lines(): { name: string; labels: Record<string, string> }[] {
    return this.#plain.flatMap((family) => family.metrics.map((sample) => ({ name: family.name, labels: sample.labels ?? {} })));
  }

  /** A histogram's observations and their sum, over the matching label sets. */
  histogram(name: string, labels: Record<string, string> = {}): { count: number; sum: number } {
    const total = (suffix: string): number =>
      this.#plain
        .filter((family) => family.name === `${name}_${suffix}`)
        .flatMap((family) => matching(family.metrics, labels))
        .reduce((sum, sample) => sum + Number(sample.value), 0);
    return { count: total("count"), sum: total("sum") };
  }
}

function matching(samples: PrometheusSample[], labels: Record<string, string>): PrometheusSample[] {
  return samples.filter((sample) => Object.entries(labels).every(([label, value]) => sample.labels?.[label] === value));
}
