/**
 * The pieces of Go's RE2 parse tree that its limits look at (size, height, nested repeats),
 * the class and Unicode names Go knows, and the error the parser (re2.ts) throws.
 */

export class RE2Error extends Error {}
export const fail = (message: string): never => {
  throw new RE2Error(message);
};

export const MAX_REPEAT = 1000;
export const MAX_HEIGHT = 1000;
/** Go: 128 MiB of 40-byte instructions. */
export const MAX_SIZE = Math.floor((128 << 20) / 40);
export const MAX_RUNE = 0x10ffff;

/**
 * The parts of Go's parse tree that the limits look at. `size` follows Go's estimate of the
 * compiled program; `height` is the tree height. Go's alternation factoring is not modelled:
 * it moves these numbers by a few units only, far from any expression a route would use.
 */
export interface Node {
  readonly kind:
    | "lit"
    | "leaf"
    | "class"
    | "capture"
    | "star"
    | "plus"
    | "quest"
    | "repeat"
    | "concat"
    | "alt";
  readonly subs: readonly Node[];
  readonly size: number;
  readonly height: number;
  /** lit: number of characters. */
  readonly runes?: number;
  readonly min?: number;
  /** repeat: -1 = unbounded. */
  readonly max?: number;
}

export function node(
  kind: Node["kind"],
  subs: readonly Node[],
  extra: { runes?: number; min?: number; max?: number } = {},
): Node {
  let size = 0;
  const s0 = subs[0]?.size ?? 0;
  switch (kind) {
    case "lit":
      size = extra.runes ?? 1;
      break;
    case "capture":
    case "star":
      size = 2 + s0;
      break;
    case "plus":
    case "quest":
      size = 1 + s0;
      break;
    case "concat":
      size = subs.reduce((a, s) => a + s.size, 0);
      break;
    case "alt":
      size = subs.reduce((a, s) => a + s.size, 0) + Math.max(0, subs.length - 1);
      break;
    case "repeat": {
      const min = extra.min ?? 0;
      const max = extra.max ?? -1;
      if (max === -1) size = min === 0 ? 2 + s0 : 1 + min * s0;
      else size = max * s0 + (max - min);
      break;
    }
    default:
      size = 1;
  }
  const height = 1 + subs.reduce((h, s) => Math.max(h, s.height), 0);
  return {
    kind,
    subs,
    size: Math.max(1, Math.min(size, Number.MAX_SAFE_INTEGER)),
    height,
    ...extra,
  };
}

export const leaf = (): Node => node("leaf", []);
/** Single characters and classes, which Go merges when they are alternatives side by side. */
export const isClassLike = (n: Node): boolean =>
  (n.kind === "lit" && n.runes === 1) || n.kind === "class";

/** Go's repeatIsValid: nested counts multiply, and their product may not exceed 1000. */
export function nestedRepeatsValid(root: Node): boolean {
  const stack: [Node, number][] = [[root, MAX_REPEAT]];
  while (stack.length > 0) {
    const [n, budget] = stack.pop()!;
    let left = budget;
    if (n.kind === "repeat") {
      let m = n.max!;
      if (m === 0) continue;
      if (m < 0) m = n.min!;
      if (m > left) return false;
      if (m > 0) left = Math.floor(left / m);
    }
    for (const s of n.subs) stack.push([s, left]);
  }
  return true;
}

/** An open group: the concatenation being built and the alternatives already closed. */
export interface Frame {
  items: Node[];
  alts: Node[];
  readonly capture: boolean;
}

export const POSIX_CLASSES = new Set(
  [
    "alnum",
    "alpha",
    "ascii",
    "blank",
    "cntrl",
    "digit",
    "graph",
    "lower",
    "print",
    "punct",
    "space",
    "upper",
    "word",
    "xdigit",
  ].flatMap(n => [`[:${n}:]`, `[:^${n}:]`]),
);

/** Unicode 15.0 general categories and scripts by their exact names, as Go ≥ 1.21 has them. */
export const UNICODE_NAMES = new Set([
  "Any",
  ..."C Cc Cf Cn Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs".split(
    " ",
  ),
  ...(
    "Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki Bopomofo " +
    "Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Common " +
    "Coptic Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs " +
    "Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi Gurmukhi Han Hangul " +
    "Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inherited Inscriptional_Pahlavi " +
    "Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kawi Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki " +
    "Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean " +
    "Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi " +
    "Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong " +
    "Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian " +
    "Old_Turkic Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi " +
    "Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese " +
    "Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana Thai Tibetan " +
    "Tifinagh Tirhuta Toto Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi Zanabazar_Square"
  ).split(" "),
]);

export const isDigit = (c: string | undefined): boolean => c !== undefined && c >= "0" && c <= "9";
export const isAlnum = (c: string): boolean => /^[A-Za-z0-9]$/.test(c);
export const hexValue = (c: string | undefined): number =>
  c !== undefined && /^[0-9A-Fa-f]$/.test(c) ? parseInt(c, 16) : -1;
