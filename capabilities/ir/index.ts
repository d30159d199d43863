export * from "./types";
export * from "./refusable";
