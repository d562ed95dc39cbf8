"use strict";
const test = require("node:test");
const assert = require("node:assert");
const { greeting } = require("../greet.js");

test("greeting trims the name", () => {
  assert.strictEqual(greeting(" node "), "hello, node");
});
