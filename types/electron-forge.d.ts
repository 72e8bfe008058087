/*
 * The part of @electron-forge/shared-types@7.11.2 (and of @electron/packager@18.4.4's Options, and
 * @electron/asar's CreateOptions) that forge.config.ts uses, copied from those packages' .d.ts files.
 * It is here because Electron Forge cannot be installed on the machine this was written on
 * (@electron/rebuild@3 depends on a git URL on GitHub). Delete this file once
 * @electron-forge/cli installs, and the real types take over.
 */
declare module '@electron-forge/shared-types' {
  /** @electron/asar CreateOptions. */
  export type AsarOptions = {
    dot?: boolean
    /**
     * Path to a file containing the list of relative filepaths relative to
     * `src` and the specific order they should be inserted into the asar.
     */
    ordering?: string
    pattern?: string
    transform?: (filePath: string) => NodeJS.ReadWriteStream | undefined
    unpack?: string
    unpackDir?: string
  }

  /** @electron/packager types.d.ts */
  export type OfficialArch = 'ia32' | 'x64' | 'armv7l' | 'arm64' | 'mips64el' | 'universal'
  export type OfficialPlatform = 'linux' | 'win32' | 'darwin' | 'mas'
  export type TargetArch = OfficialArch | string
  export type TargetPlatform = OfficialPlatform | string
  export type ArchOption = TargetArch | 'all'
  export type IgnoreFunction = (path: string) => boolean

  /** A collection of application metadata to embed into the Windows executable. */
  export interface Win32MetadataOptions {
    CompanyName?: string
    FileDescription?: string
    OriginalFilename?: string
    ProductName?: string
    InternalName?: string
    'requested-execution-level'?: 'asInvoker' | 'highestAvailable' | 'requireAdministrator'
    'application-manifest'?: string
  }

  /** The subset of @electron/packager's Options this project sets. */
  export interface ElectronPackagerOptions {
    dir: string
    appBundleId?: string
    appCategoryType?: string
    appCopyright?: string
    asar?: boolean | AsarOptions
    derefSymlinks?: boolean
    executableName?: string
    extraResource?: string | string[]
    icon?: string | string[]
    ignore?: RegExp | Array<string | RegExp> | IgnoreFunction
    name?: string
    prune?: boolean
    win32metadata?: Win32MetadataOptions
  }

  /** The subset of @electron/rebuild's RebuildOptions this project sets. */
  export interface RebuildOptions {
    buildPath: string
    electronVersion: string
    arch?: string
    onlyModules?: string[] | null
    force?: boolean
    ignoreModules?: string[]
  }

  export type ForgePlatform = TargetPlatform
  export type ForgeArch = ArchOption
  export type ForgeConfigPublisher = IForgeResolvablePublisher
  export type ForgeConfigMaker = IForgeResolvableMaker
  export type ForgeConfigPlugin = IForgeResolvablePlugin
  export type ForgeRebuildOptions = Omit<RebuildOptions, 'buildPath' | 'electronVersion' | 'arch'>
  export type ForgePackagerOptions = Omit<
    ElectronPackagerOptions,
    'dir' | 'arch' | 'platform' | 'out' | 'electronVersion'
  >

  export interface ResolvedForgeConfig {
    /**
     * A string to uniquely identify artifacts of this build, will be appended
     * to the out dir to generate a nested directory.  E.g. out/current-timestamp
     */
    buildIdentifier?: string | (() => string)
    /** Output directory. Default is './out'. */
    outDir?: string
    /** An array of Forge plugins or a tuple consisting of [pluginName, pluginOptions] */
    plugins: ForgeConfigPlugin[]
    rebuildConfig: ForgeRebuildOptions
    packagerConfig: ForgePackagerOptions
    makers: ForgeConfigMaker[]
    publishers: ForgeConfigPublisher[]
  }
  export type ForgeConfig = Partial<ResolvedForgeConfig>

  export interface IForgeResolvablePlugin {
    name: string
    config?: unknown
  }
  export interface IForgeResolvableMaker {
    name: string
    config: unknown
    enabled?: boolean
    platforms?: ForgePlatform[] | null
  }
  export interface IForgeResolvablePublisher {
    name: string
    platforms?: ForgePlatform[] | null
    config?: unknown
  }
}
