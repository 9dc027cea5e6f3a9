// Writes dist/platform.schema.json (exported as action-service/platform.schema.json) from the
// platform file's zod schema, once tsc has built it: the file editors read is the validator's own.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const dist = join(import.meta.dirname, "..", "dist");
const { platformJsonSchema } = await import(join(dist, "platforms", "declared", "schema.js"));
writeFileSync(join(dist, "platform.schema.json"), `${JSON.stringify(platformJsonSchema(), null, 2)}\n`);
