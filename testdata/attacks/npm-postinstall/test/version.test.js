"use strict";
const test = require("node:test");
const assert = require("node:assert");

test("postinstall generated the version", () => {
  assert.strictEqual(require("../generated.js"), "1.0.0");
});
