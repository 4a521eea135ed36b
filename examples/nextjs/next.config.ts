import type { NextConfig } from 'next';

const nextConfig: NextConfig = {
  // This app is its own root, also inside the Mordn repository (which has a lockfile of its own).
  turbopack: { root: __dirname },
};

export default nextConfig;
