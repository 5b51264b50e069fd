// The page's Markdown rendered again in the browser with the same library the build used.
import { marked } from "marked";

const source = document.getElementById("md-source");
const live = document.getElementById("live");
if (source && live) {
  live.innerHTML = marked.parse(source.textContent);
}
window.OCIBUILD_FRONTEND = "bundled by esbuild from web/src/main.js";
