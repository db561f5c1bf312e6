/** Packages the CLI's bundles leave outside (build-cache.mjs). */
export const CLI_EXTERNALS: string[];
/** `mtimeMs:size` of a file, or `missing`. */
export function stamp(file: string): string;
/** The entry file of the build `manifestFile` describes, or null when any input changed or an output is gone. */
export function cachedBuild(manifestFile: string): string | null;
/** Records a build: its outputs (entry first) and the inputs of esbuild's metafile, relative to `baseDir`. */
export function saveBuild(manifestFile: string, outputs: string[], metafile: { inputs: Record<string, unknown> }, baseDir: string): void;
