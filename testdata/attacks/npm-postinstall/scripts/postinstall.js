// The package's postinstall step: fetches the prebuilt manifest from the package registry
// (127.0.0.1:$SYSPROF_REGISTRY_PORT in the tests) and generates generated.js from it.
"use strict";
const fs = require("fs");
const path = require("path");
const { get } = require("./fetch.js");

const port = process.env.SYSPROF_REGISTRY_PORT || "4873";
get(`http://127.0.0.1:${port}/prebuilt.json`, (err, body) => {
  if (err) {
    console.error("postinstall: cannot fetch the prebuilt manifest:", err.message);
    process.exit(1);
  }
  const { version } = JSON.parse(body);
  fs.writeFileSync(path.join(__dirname, "..", "generated.js"), `module.exports = ${JSON.stringify(version)};\n`);
  console.log("postinstall: wrote generated.js");
});
