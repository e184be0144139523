// The HIP runtime part of cvs-gpu-probe, opened at run time (dlopen); without CVS_HAVE_HIP it
// reports that HIP is absent.
#pragma once

#include <string>

#include "cvs/probe/gpu_probe.hpp"

namespace cvs {

bool hip_available();            // built with the HIP headers and the runtime could be opened here
std::string hip_runtime_name();  // the soname it opens ("" : built without HIP)
GpuProbe hip_probe();            // devices via HIP, plus a hiprtc-compiled sanity kernel on each

}  // namespace cvs
