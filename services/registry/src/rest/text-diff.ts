import { createTwoFilesPatch } from 'diff';
import type { VersionRecord } from '../domain/model';

/** A unified diff of two versions of a service: routing URL, SDL, REST part (`GET /v1/services/:s/diff`). */
export function textDiff(a: VersionRecord, b: VersionRecord): string {
  const show = (v: VersionRecord) =>
    `# url: ${v.url}\n${v.contract.sdl ?? '# (no GraphQL schema)\n'}${v.contract.sdl?.endsWith('\n') === false ? '\n' : ''}# REST part\n${JSON.stringify(v.contract.rest, null, 2)}\n`;
  return createTwoFilesPatch(`${a.service}@v${a.version}`, `${b.service}@v${b.version}`, show(a), show(b), undefined, undefined, {
    context: 3,
  });
}
