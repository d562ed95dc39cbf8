// The package's postinstall step: generates generated.js from the package version.
"use strict";
const fs = require("fs");
const path = require("path");
const pkg = require("../package.json");
fs.writeFileSync(path.join(__dirname, "..", "generated.js"), `module.exports = ${JSON.stringify(pkg.version)};\n`);
console.log("postinstall: wrote generated.js");
