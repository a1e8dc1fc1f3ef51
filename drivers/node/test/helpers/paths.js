import { fileURLToPath } from "node:url";

export const DRIVER_DIR = fileURLToPath(new URL("../../", import.meta.url));
export const SPEC_DIR = fileURLToPath(new URL("../../../../spec/", import.meta.url));
export const HDR_VECTORS = fileURLToPath(new URL("../../../../spec/vectors/hdr/", import.meta.url));
export const SCENARIO_VECTORS = fileURLToPath(new URL("../../../../spec/vectors/scenarios/", import.meta.url));
export const DELIVERY_VECTORS = fileURLToPath(new URL("../../../../spec/vectors/delivery/", import.meta.url));
