/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef CHECK_LWK_H
#define CHECK_LWK_H

#include <check.h>

Suite *cpulist_suite(void);
Suite *options_suite(void);
Suite *config_suite(void);
Suite *topology_suite(void);
Suite *monitor_suite(void);
Suite *sampler_suite(void);
Suite *sweep_suite(void);
Suite *cgroup_suite(void);
Suite *hugeperf_suite(void);

#endif
