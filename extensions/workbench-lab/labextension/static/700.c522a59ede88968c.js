"use strict";(self.rspackChunkkernel_workbench_lab=self.rspackChunkkernel_workbench_lab||[]).push([[700],{"./node_modules/css-loader/dist/cjs.js!./style/index.css"(e,t,o){var r=o("./node_modules/css-loader/dist/runtime/noSourceMaps.js"),n=o.n(r),s=o("./node_modules/css-loader/dist/runtime/api.js"),a=(o.n(s))()(n());a.push([e.id,`/* Kernel Workbench sidebar. JupyterLab's CSS variables keep it in the user's theme.
   Laid out for the sidebar's default width (~250 px): no fixed widths, the numbers never
   shrink, the text columns do (ellipsis, full text in the tooltip). */
.wb-lab-sidebar {
  background: var(--jp-layout-color1);
  box-sizing: border-box;
  color: var(--jp-ui-font-color1);
  font-size: var(--jp-ui-font-size1);
  overflow-x: hidden;
  overflow-y: auto;
  padding: 8px;
}

.wb-lab-head {
  align-items: center;
  display: flex;
  justify-content: space-between;
  margin-bottom: 6px;
}

.wb-lab-title {
  font-size: var(--jp-ui-font-size2);
  font-weight: 600;
}

.wb-lab-status {
  color: var(--jp-ui-font-color2);
  margin-bottom: 8px;
  overflow-wrap: anywhere;
}

.wb-lab-refreshing .wb-lab-refresh {
  opacity: 0.6;
}

.wb-lab-error {
  color: var(--jp-error-color1);
}

.wb-lab-kernel {
  border-top: 1px solid var(--jp-border-color2);
  padding: 6px 0;
}

.wb-lab-kernel-head {
  align-items: center;
  display: flex;
  gap: 6px;
  justify-content: space-between;
}

.wb-lab-kernel-name {
  font-family: var(--jp-code-font-family);
  font-weight: 600;
  min-width: 0;
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
}

.wb-lab-open {
  flex: none;
}

.wb-lab-open-error {
  overflow-wrap: anywhere;
}

.wb-lab-kernel-path {
  color: var(--jp-ui-font-color2);
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
}

.wb-lab-empty {
  color: var(--jp-ui-font-color2);
  overflow-wrap: anywhere;
}

.wb-lab-sidebar button {
  background: var(--jp-layout-color2);
  border: 1px solid var(--jp-border-color1);
  border-radius: 2px;
  color: var(--jp-ui-font-color1);
  cursor: pointer;
  padding: 2px 8px;
}

/* One grid per session: problem | best | speedup, then a full-width line below. */
.wb-lab-sessions-head,
.wb-lab-session {
  column-gap: 8px;
  display: grid;
  grid-template-columns: minmax(0, 1fr) auto auto;
}

.wb-lab-sessions {
  margin-top: 4px;
}

.wb-lab-sessions-head {
  border-bottom: 1px solid var(--jp-border-color3);
  color: var(--jp-ui-font-color2);
  padding-bottom: 1px;
}

.wb-lab-sessions-head span:nth-child(n + 2) {
  text-align: right;
}

.wb-lab-session {
  border-bottom: 1px solid var(--jp-border-color3);
  padding: 3px 0;
}

.wb-lab-problem {
  min-width: 0;
  overflow: hidden;
  text-overflow: ellipsis;
  white-space: nowrap;
}

.wb-lab-shape {
  font-family: var(--jp-code-font-family);
}

.wb-lab-dtype {
  color: var(--jp-ui-font-color2);
  margin-left: 4px;
}

.wb-lab-best,
.wb-lab-speedup {
  font-variant-numeric: tabular-nums;
  text-align: right;
  white-space: nowrap;
}

.wb-lab-speedup {
  font-weight: 600;
}

.wb-lab-session-meta {
  color: var(--jp-ui-font-color2);
  display: flex;
  flex-wrap: wrap;
  gap: 0 6px;
  grid-column: 1 / -1;
}

.wb-lab-decided {
  font-style: italic;
}

.wb-lab-empty-sessions {
  color: var(--jp-ui-font-color2);
  margin-top: 3px;
}

.wb-lab-empty-count {
  cursor: pointer;
}
`,""]),o.d(t,{},{A:a})},"./node_modules/css-loader/dist/runtime/api.js"(e){e.exports=function(e){var t=[];return t.toString=function(){return this.map(function(t){var o="",r=void 0!==t[5];return t[4]&&(o+="@supports (".concat(t[4],") {")),t[2]&&(o+="@media ".concat(t[2]," {")),r&&(o+="@layer".concat(t[5].length>0?" ".concat(t[5]):""," {")),o+=e(t),r&&(o+="}"),t[2]&&(o+="}"),t[4]&&(o+="}"),o}).join("")},t.i=function(e,o,r,n,s){"string"==typeof e&&(e=[[null,e,void 0]]);var a={};if(r)for(var i=0;i<this.length;i++){var l=this[i][0];null!=l&&(a[l]=!0)}for(var d=0;d<e.length;d++){var c=[].concat(e[d]);r&&a[c[0]]||(void 0!==s&&(void 0===c[5]||(c[1]="@layer".concat(c[5].length>0?" ".concat(c[5]):""," {").concat(c[1],"}")),c[5]=s),o&&(c[2]&&(c[1]="@media ".concat(c[2]," {").concat(c[1],"}")),c[2]=o),n&&(c[4]?(c[1]="@supports (".concat(c[4],") {").concat(c[1],"}"),c[4]=n):c[4]="".concat(n)),t.push(c))}},t}},"./node_modules/css-loader/dist/runtime/noSourceMaps.js"(e){e.exports=function(e){return e[1]}},"./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"(e){var t=[];function o(e){for(var o=-1,r=0;r<t.length;r++)if(t[r].identifier===e){o=r;break}return o}function r(e,r){for(var n={},s=[],a=0;a<e.length;a++){var i=e[a],l=r.base?i[0]+r.base:i[0],d=n[l]||0,c="".concat(l," ").concat(d);n[l]=d+1;var p=o(c),u={css:i[1],media:i[2],sourceMap:i[3],supports:i[4],layer:i[5]};if(-1!==p)t[p].references++,t[p].updater(u);else{var b=function(e,t){var o=t.domAPI(t);return o.update(e),function(t){t?(t.css!==e.css||t.media!==e.media||t.sourceMap!==e.sourceMap||t.supports!==e.supports||t.layer!==e.layer)&&o.update(e=t):o.remove()}}(u,r);r.byIndex=a,t.splice(a,0,{identifier:c,updater:b,references:1})}s.push(c)}return s}e.exports=function(e,n){var s=r(e=e||[],n=n||{});return function(e){e=e||[];for(var a=0;a<s.length;a++){var i=o(s[a]);t[i].references--}for(var l=r(e,n),d=0;d<s.length;d++){var c=o(s[d]);0===t[c].references&&(t[c].updater(),t.splice(c,1))}s=l}}},"./node_modules/style-loader/dist/runtime/insertBySelector.js"(e){var t={};e.exports=function(e,o){var r=function(e){if(void 0===t[e]){var o=document.querySelector(e);if(window.HTMLIFrameElement&&o instanceof window.HTMLIFrameElement)try{o=o.contentDocument.head}catch(e){o=null}t[e]=o}return t[e]}(e);if(!r)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");r.appendChild(o)}},"./node_modules/style-loader/dist/runtime/insertStyleElement.js"(e){e.exports=function(e){var t=document.createElement("style");return e.setAttributes(t,e.attributes),e.insert(t,e.options),t}},"./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"(e,t,o){e.exports=function(e){var t=o.nc;t&&e.setAttribute("nonce",t)}},"./node_modules/style-loader/dist/runtime/styleDomAPI.js"(e){e.exports=function(e){if("u"<typeof document)return{update:function(){},remove:function(){}};var t=e.insertStyleElement(e);return{update:function(o){var r,n,s;r="",o.supports&&(r+="@supports (".concat(o.supports,") {")),o.media&&(r+="@media ".concat(o.media," {")),(n=void 0!==o.layer)&&(r+="@layer".concat(o.layer.length>0?" ".concat(o.layer):""," {")),r+=o.css,n&&(r+="}"),o.media&&(r+="}"),o.supports&&(r+="}"),(s=o.sourceMap)&&"u">typeof btoa&&(r+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(s))))," */")),e.styleTagTransform(r,t,e.options)},remove:function(){var e;null===(e=t).parentNode||e.parentNode.removeChild(e)}}}},"./node_modules/style-loader/dist/runtime/styleTagTransform.js"(e){e.exports=function(e,t){if(t.styleSheet)t.styleSheet.cssText=e;else{for(;t.firstChild;)t.removeChild(t.firstChild);t.appendChild(document.createTextNode(e))}}},"./style/index.js"(e,t,o){var r=o("./node_modules/style-loader/dist/runtime/injectStylesIntoStyleTag.js"),n=o.n(r),s=o("./node_modules/style-loader/dist/runtime/styleDomAPI.js"),a=o.n(s),i=o("./node_modules/style-loader/dist/runtime/insertBySelector.js"),l=o.n(i),d=o("./node_modules/style-loader/dist/runtime/setAttributesWithoutAttributes.js"),c=o.n(d),p=o("./node_modules/style-loader/dist/runtime/insertStyleElement.js"),u=o.n(p),b=o("./node_modules/style-loader/dist/runtime/styleTagTransform.js"),f=o.n(b),m=o("./node_modules/css-loader/dist/cjs.js!./style/index.css"),h={};h.styleTagTransform=f(),h.setAttributes=c(),h.insert=l().bind(null,"head"),h.domAPI=a(),h.insertStyleElement=u(),n()(m.A,h),m.A&&m.A.locals&&m.A.locals}}]);