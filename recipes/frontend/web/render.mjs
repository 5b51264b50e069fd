// Build time: page.md rendered to dist/index.html with marked (from the lock), the bundle
// linked from it.
import { readFileSync, writeFileSync } from "node:fs";
import { marked } from "marked";

const md = readFileSync("page.md", "utf8");
const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ocibuild frontend</title></head>
<body>
${marked.parse(md)}<div id="live"></div>
<script id="md-source" type="text/markdown">${md}</script>
<script src="/static/app.js"></script>
</body></html>
`;
writeFileSync("dist/index.html", html);
console.log(`dist/index.html: ${html.length} bytes`);
