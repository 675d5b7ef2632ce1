/* models.c - which flash image each scenario loads. Same weights everywhere;
 * only the storage differs: raw NCHW (default), conv_b in NHWC (reorder),
 * or RLE-compressed (load-peak). */
#include "engine.h"
#include "model_data.h"
#include "scenario.h"

#if SCEN_COMPRESSED_MODEL
#define WAKE_IMAGE model_wake_rle
#define CMD_IMAGE  model_cmd_rle
#define WAKE_LEN   MODEL_WAKE_RLE_LEN
#define CMD_LEN    MODEL_CMD_RLE_LEN
#elif SCEN_NHWC_CONV_B
#define WAKE_IMAGE model_wake_nhwc
#define CMD_IMAGE  model_cmd_nhwc
#define WAKE_LEN   MODEL_WAKE_RAW_LEN
#define CMD_LEN    MODEL_CMD_RAW_LEN
#else
#define WAKE_IMAGE model_wake_raw
#define CMD_IMAGE  model_cmd_raw
#define WAKE_LEN   MODEL_WAKE_RAW_LEN
#define CMD_LEN    MODEL_CMD_RAW_LEN
#endif

const model_desc_t g_model_wake = {"wake_word", WAKE_IMAGE, WAKE_LEN, MODEL_WAKE_RAW_LEN,
                                   SCEN_COMPRESSED_MODEL};
const model_desc_t g_model_cmd = {"command_word", CMD_IMAGE, CMD_LEN, MODEL_CMD_RAW_LEN,
                                  SCEN_COMPRESSED_MODEL};
