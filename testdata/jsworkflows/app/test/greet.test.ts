import { mkdtempSync, rmSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { greet } from "../src/greet.js";

describe("greet", () => {
  it("greets", () => {
    expect(greet("world")).toBe("hello, world");
  });
  it("writes a temp file", () => {
    const d = mkdtempSync(join(tmpdir(), "jsapp-"));
    writeFileSync(join(d, "f.txt"), "x");
    expect(readFileSync(join(d, "f.txt"), "utf8")).toBe("x");
    rmSync(d, { recursive: true });
  });
});
