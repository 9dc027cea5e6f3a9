// Writes dist/platform.schema.json (exported as action-service/platform.schema.json) from the
// platform file's zod schema, once dist/ is built: the file editors read is what `driver schema`
// prints, the validator's own.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const dist = join(import.meta.dirname, "..", "dist");
writeFileSync(join(dist, "platform.schema.json"), execFileSync(process.execPath, [join(dist, "cli.js"), "driver", "schema"], { encoding: "utf8" }));
