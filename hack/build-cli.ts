/**
 * Builds the kubectl plugin (`npm run build:cli`, part of `npm run build`): cli/main.ts and
 * everything it imports, bundled by esbuild into one executable `dist/kubectl-kengine` with a
 * node shebang. It is not part of the Pepr module bundle, whose budget hack/dist.ts checks.
 */
import { build } from "esbuild";
import { chmodSync, statSync } from "node:fs";
import { join } from "node:path";

const root = join(__dirname, "..");
const outfile = join(root, process.argv[2] ?? "dist", "kubectl-kengine");

async function main(): Promise<void> {
  await build({
    entryPoints: [join(root, "cli", "main.ts")],
    outfile,
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    minify: true,
    legalComments: "none",
    banner: { js: "#!/usr/bin/env node" },
    logLevel: "warning",
  });
  chmodSync(outfile, 0o755);
  const kib = Math.round(statSync(outfile).size / 1024);
  console.log(
    `kubectl plugin: ${outfile} (${kib} KiB); install: put it on your PATH (docs/operations.md §8)`,
  );
}

main().catch(e => {
  console.error(`npm run build:cli: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
