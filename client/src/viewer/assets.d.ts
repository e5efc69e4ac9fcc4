// Vite's `?url` imports: the asset's URL (here pdf.js's worker, emitted into the app's own assets).
declare module "*?url" {
  const url: string;
  export default url;
}
