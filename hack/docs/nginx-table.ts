/**
 * Rewrites the annotation table of docs/ingress.md from the one table the controller reads
 * (capabilities/validation/nginx-table.ts), so the two never disagree (a unit test checks it):
 * `npx tsx hack/docs/nginx-table.ts && npx prettier --write docs/ingress.md`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { NGINX_ANNOTATIONS } from "../../capabilities/validation/nginx-table";

const file = join(__dirname, "../../docs/ingress.md");
const lines = readFileSync(file, "utf8").split("\n");
const head = lines.findIndex(l => /^\| annotation +\| support +\| what it becomes/.test(l));
if (head < 0) throw new Error("docs/ingress.md has no annotation table");
let end = head + 2;
while (end < lines.length && lines[end]!.startsWith("|")) end++;
const rows = Object.entries(NGINX_ANNOTATIONS).map(
  ([name, e]) => `| \`${name}\` | ${e.support} | ${e.becomes.replace(/\|/g, "\\|")} |`,
);
lines.splice(head + 2, end - head - 2, ...rows);
writeFileSync(file, lines.join("\n"));
