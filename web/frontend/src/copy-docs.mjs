// Copies Swagger UI's and ReDoc's prebuilt files from node_modules into web/static/dist/docs/
// so /docs and /redoc load nothing from outside the site (see web/routes/api_docs.py).
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const out = new URL("../../static/dist/docs/", import.meta.url).pathname;
mkdirSync(out, { recursive: true });
const swagger = dirname(require.resolve("swagger-ui-dist/package.json"));
const redoc = dirname(require.resolve("redoc/package.json"));
for (const [from, name] of [
  [join(swagger, "swagger-ui-bundle.js"), "swagger-ui-bundle.js"],
  [join(swagger, "swagger-ui.css"), "swagger-ui.css"],
  [join(redoc, "bundles", "redoc.standalone.js"), "redoc.standalone.js"],
]) copyFileSync(from, join(out, name));
