/** The Electron binary, or why there is none (the npm package throws when its binary was not downloaded). */
export declare function electronBinary():
  | {
      path: string
    }
  | {
      missing: string
    }
