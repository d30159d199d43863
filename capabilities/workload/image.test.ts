/**
 * The proxy image (proxy/image) and the pods we give it agree: it runs the command the managed
 * pods run, with its writable directories where the pods mount their data volume, and the
 * default image names the version the image build stamps (package.json).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_PROXY_IMAGE, DEFAULT_PROXY_SETTINGS } from "../provision/settings";
import { BOOTSTRAP_DIR, BOOTSTRAP_FILE, DATA_DIR, proxyContainer } from "./pod";

const imageGo = readFileSync(join(__dirname, "../../proxy/image/image.go"), "utf8");
const goConst = (name: string): string | undefined =>
  new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`).exec(imageGo)?.[1];

describe("the proxy image", () => {
  it("holds the data directory the pods mount and the bootstrap config path they pass", () => {
    expect(goConst("DataDir")).toBe(DATA_DIR);
    expect(goConst("BootstrapConfig")).toBe(`${BOOTSTRAP_DIR}/${BOOTSTRAP_FILE}`);
  });

  it("has the binary the managed pods' command names on its PATH", () => {
    const cmd =
      proxyContainer({ image: DEFAULT_PROXY_IMAGE, command: DEFAULT_PROXY_SETTINGS.command })
        .command ?? [];
    const binary = goConst("BinaryPath") ?? "";
    expect(binary.split("/").pop()).toBe(cmd[0]);
    expect(imageGo).toContain(`"PATH=${binary.slice(0, binary.lastIndexOf("/"))}"`);
  });

  it("is the default image, tagged with package.json's version", () => {
    const pkg = JSON.parse(readFileSync(join(__dirname, "../../package.json"), "utf8")) as {
      version: string;
      kengine: { proxyImage: string };
    };
    expect(DEFAULT_PROXY_SETTINGS.image).toBe(`${pkg.kengine.proxyImage}:${pkg.version}`);
    // The example GatewayClass parameters (dist/gatewayclass.yaml) name the same image.
    const example = readFileSync(
      join(__dirname, "../../deploy/examples/gatewayclass.yaml"),
      "utf8",
    );
    expect([...example.matchAll(/^\s*image:\s*(\S+)$/gm)].map(m => m[1])).toEqual([
      DEFAULT_PROXY_IMAGE,
    ]);
  });
});
