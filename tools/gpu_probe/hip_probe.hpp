// The HIP runtime part of gpu_probe; without CVS_HAVE_HIP it reports that HIP is absent.
#pragma once

#include "cvs/probe/gpu_probe.hpp"

namespace cvs {

bool hip_available();  // built against the HIP runtime
GpuProbe hip_probe();  // devices via HIP, plus a hiprtc-compiled sanity kernel on each

}  // namespace cvs
