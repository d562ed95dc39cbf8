// A tiny HTTP GET helper (node's http client; the package has no dependencies). Used by
// postinstall.js for the prebuilt manifest; as a program, `node scripts/fetch.js URL` prints the
// body to stdout and exits 1 on any error.
"use strict";
const http = require("http");

function get(url, done) {
  http
    .get(url, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (body += c));
      res.on("end", () => done(null, body));
    })
    .on("error", (err) => done(err));
}

module.exports = { get };

if (require.main === module) {
  get(process.argv[2], (err, body) => {
    if (err) process.exit(1);
    process.stdout.write(body);
  });
}
