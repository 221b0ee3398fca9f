// Decodes a Kubernetes list response (`{"kind":…,"metadata":{…},"items":[{…},…]}`) as its bytes
// arrive: each item is parsed on its own the moment its closing brace is seen and handed to the
// caller, so a 10k-pod list never exists as one string or as 10k raw objects at once. Only the
// byte values of `"`, `\`, `{`, `}`, `[`, `]`, `:` and `,` matter to the scan, and none of them occurs
// inside a multi-byte UTF-8 sequence, so chunks may split anywhere.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;

/** What a top-level value being read is kept for. */
type Capture = "key" | "metadata" | "item" | undefined;

export interface ListMetadata {
  resourceVersion?: string;
  continue?: string;
}

export class ListDecoder {
  private readonly onItem: (item: unknown) => void;
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** At depth 1: the last key read, and whether its value has started. */
  private key = "";
  private inValue = false;
  private inItems = false;
  private capture: Capture;
  /** Depth at which the captured value started. */
  private captureDepth = 0;
  /** Pieces of the captured value from earlier chunks. */
  private pieces: Buffer[] = [];
  private metadataText = "";
  private sawItems = false;

  constructor(onItem: (item: unknown) => void) {
    this.onItem = onItem;
  }

  write(chunk: Buffer): void {
    let start = this.capture ? 0 : -1;
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          i++;
          continue;
        }
        const quote = chunk.indexOf(QUOTE, i);
        const stop = quote < 0 ? n : quote;
        let backslashes = 0;
        while (stop - backslashes - 1 >= i && chunk[stop - backslashes - 1] === BACKSLASH) backslashes++;
        if (quote < 0) {
          this.escaped = backslashes % 2 === 1;
          i = n;
          break;
        }
        i = quote + 1;
        if (backslashes % 2 === 1) continue;
        this.inString = false;
        if (this.capture === "key") {
          this.pieces.push(chunk.subarray(start, quote));
          this.key = Buffer.concat(this.pieces).toString("utf8");
          this.pieces = [];
          this.capture = undefined;
          start = -1;
        }
        continue;
      }
      const byte = chunk[i] as number;
      switch (byte) {
        case QUOTE:
          this.inString = true;
          if (this.depth === 1 && !this.inValue) {
            this.capture = "key";
            start = i + 1;
          }
          break;
        case COLON:
          if (this.depth === 1) this.inValue = true;
          break;
        case COMMA:
          if (this.depth === 1) this.inValue = false;
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          this.depth++;
          if (this.depth === 2 && this.inValue) {
            if (this.key === "items" && byte === OPEN_BRACKET) {
              this.inItems = true;
              this.sawItems = true;
            } else if (this.key === "metadata" && byte === OPEN_BRACE) {
              this.capture = "metadata";
              this.captureDepth = 2;
              start = i;
            }
          } else if (this.depth === 3 && this.inItems && !this.capture) {
            this.capture = "item";
            this.captureDepth = 3;
            start = i;
          }
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          if (this.capture && this.depth === this.captureDepth) {
            this.pieces.push(chunk.subarray(start, i + 1));
            const text = this.pieces.length === 1 ? chunk.toString("utf8", start, i + 1) : undefined;
            const value = text ?? Buffer.concat(this.pieces).toString("utf8");
            this.pieces = [];
            if (this.capture === "item") this.onItem(JSON.parse(value));
            else this.metadataText = value;
            this.capture = undefined;
            start = -1;
          }
          if (this.depth === 2 && this.inItems) this.inItems = false;
          this.depth--;
          break;
      }
      i++;
    }
    if (this.capture && start >= 0) this.pieces.push(Buffer.from(chunk.subarray(start)));
  }

  /** The list's metadata, once the whole response has been written; throws on a truncated body. */
  end(): ListMetadata {
    if (this.depth !== 0 || this.inString) throw new Error("list response ended mid-document");
    if (!this.sawItems && !this.metadataText) throw new Error("response is not a list");
    return this.metadataText ? (JSON.parse(this.metadataText) as ListMetadata) : {};
  }
}
